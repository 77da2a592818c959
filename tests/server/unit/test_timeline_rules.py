"""The timeline's geometry: windows, clamped bars, ticks, the now line."""
from datetime import datetime, timedelta, timezone

import pytest

from lablease.domain import timeline as t
from lablease.domain.errors import Invalid

NOW = datetime(2026, 3, 4, 12, 0, tzinfo=timezone.utc)
H = timedelta(hours=1)


def test_span_windows_start_a_seventh_before_now():
    start, end = t.window("7d", None, None, NOW)
    assert (start, end) == (NOW - timedelta(days=1), NOW + timedelta(days=6))
    start, end = t.window("1d", None, None, NOW)
    assert end - start == timedelta(days=1) and start < NOW < end


def test_explicit_window_and_its_mistakes():
    assert t.window(None, NOW, NOW + 3 * H, NOW) == (NOW, NOW + 3 * H)
    assert t.window("1d", NOW, None, NOW) == (NOW, NOW + timedelta(days=1))
    with pytest.raises(Invalid, match="must be after start"):
        t.window(None, NOW, NOW - H, NOW)
    with pytest.raises(Invalid, match="at most 92 days"):
        t.window(None, NOW, NOW + timedelta(days=100), NOW)
    with pytest.raises(Invalid, match="1d, 7d, 30d"):
        t.window("2y", None, None, NOW)


def test_bars_sit_in_proportion_and_are_clamped_to_the_window():
    start, end = NOW, NOW + 10 * H
    chart = t.layout([("a.example.com", "/systems/a.example.com", [
        t.Span("reservation", NOW + 2 * H, NOW + 4 * H, "reservation 7", "/reservations/7"),
        t.Span("recipe", NOW - 5 * H, NOW + H, "recipe 3", "/jobs/1"),
        t.Span("ar", NOW + 8 * H, None, "AR 2", None),
        t.Span("reservation", NOW + 20 * H, NOW + 21 * H, "later", None),
    ])], start, end, NOW)
    recipe, reservation, ar = chart.rows[0].bars  # ordered by start; the later one is outside
    per_hour = t.CHART_WIDTH / 10
    assert reservation.x == pytest.approx(t.LABEL_WIDTH + 2 * per_hour)
    assert reservation.width == pytest.approx(2 * per_hour)
    assert recipe.x == t.LABEL_WIDTH and recipe.cut_left and not recipe.cut_right
    assert ar.x + ar.width == pytest.approx(t.LABEL_WIDTH + t.CHART_WIDTH) and ar.cut_right
    assert "open-ended" in ar.title and reservation.href == "/reservations/7"
    assert chart.now_x == t.LABEL_WIDTH


def test_loans_take_a_thin_band_above_the_bookings_they_allow():
    chart = t.layout([("a", None, [t.Span("loan", NOW, NOW + 5 * H, "to alice"),
                                   t.Span("reservation", NOW + H, NOW + 2 * H, "r")])], NOW, NOW + 10 * H, NOW)
    loan, booking = chart.rows[0].bars
    assert loan.y + loan.height <= booking.y
    assert loan.title.startswith("loan: to alice")


def test_a_tiny_booking_stays_visible_and_rows_stack():
    chart = t.layout([("a", None, []), ("b", None, [t.Span("recipe", NOW, NOW + timedelta(seconds=1), "x")])],
                     NOW, NOW + timedelta(days=30), NOW - H)
    assert chart.rows[1].y == chart.rows[0].y + t.ROW_HEIGHT
    assert chart.rows[1].bars[0].width == t.MIN_BAR
    assert chart.now_x is None  # now lies before the window
    assert chart.height == t.AXIS_HEIGHT + 2 * t.ROW_HEIGHT


@pytest.mark.parametrize("length, label", [(timedelta(days=1), "15:00"), (timedelta(days=7), "Mar 05"),
                                           (timedelta(days=30), "Mar 09")])
def test_ticks_fall_on_round_times_and_stay_few(length, label):
    start = NOW + timedelta(hours=2, minutes=30)
    ticks = t.ticks(start, start + length)
    assert 3 <= len(ticks) <= t.MAX_TICKS
    assert ticks[0].label == label
    assert all(t.LABEL_WIDTH <= tick.x <= t.LABEL_WIDTH + t.CHART_WIDTH for tick in ticks)
