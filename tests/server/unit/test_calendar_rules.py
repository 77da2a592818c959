from datetime import datetime, timedelta, timezone

import pytest

from lablease.domain.calendar import Booking, exclusive_conflict, fits_capacity, peak_use
from lablease.domain.errors import Invalid
from lablease.domain.windows import Window, overlaps

T0 = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)


def w(start_h, end_h=None):
    return Window(T0 + timedelta(hours=start_h), None if end_h is None else T0 + timedelta(hours=end_h))


@pytest.mark.parametrize("a, b, expected", [
    (w(0, 2), w(1, 3), True),
    (w(0, 2), w(2, 3), False),      # back to back is fine: windows are half-open
    (w(2, 3), w(0, 2), False),
    (w(0, 1), w(0, 1), True),
    (w(0), w(5, 6), True),          # open-ended overlaps everything after its start
    (w(5), w(0, 5), False),
    (w(0), w(3), True),
    (w(1, 2), w(0, 4), True),       # contained
])
def test_overlaps(a, b, expected):
    assert overlaps(a, b) is expected
    assert overlaps(b, a) is expected


def test_window_refuses_end_before_start():
    with pytest.raises(Invalid) as error:
        w(2, 1)
    assert error.value.field == "end"


def test_only_the_latest_booking_before_the_end_can_conflict():
    latest = Booking(1, w(0, 2))
    assert exclusive_conflict(latest, w(1, 3)) is latest
    assert exclusive_conflict(latest, w(2, 3)) is None
    assert exclusive_conflict(None, w(2, 3)) is None
    assert exclusive_conflict(Booking(2, w(0)), w(10, 11)).id == 2


def test_peak_use_adds_overlapping_quantities():
    bookings = [Booking(1, w(0, 4), 2), Booking(2, w(1, 2), 1), Booking(3, w(3, 5), 1), Booking(4, w(6, 7), 5)]
    peak, at = peak_use(bookings, w(0, 5))
    assert peak == 3
    assert at.id == 2


def test_peak_use_treats_back_to_back_as_sequential():
    bookings = [Booking(1, w(0, 2), 2), Booking(2, w(2, 4), 2)]
    assert peak_use(bookings, w(0, 4))[0] == 2


def test_fits_capacity_refuses_overbooking():
    bookings = [Booking(1, w(0, 4), 2), Booking(2, w(1, 2), 1)]
    assert fits_capacity(bookings, w(2, 3), 1, capacity=3) is None
    # refused: the booking that completes the peak is named (the one a 409 shows)
    assert fits_capacity(bookings, w(1, 3), 1, capacity=3) == bookings[1]
    assert fits_capacity([], w(0, 1), 4, capacity=3) == Booking(None, w(0, 1), 4)  # more than there is at all
