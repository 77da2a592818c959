from datetime import datetime, timedelta, timezone

import pytest

from lablease.domain.errors import Invalid
from lablease.domain.reservations import (
    UNLIMITED,
    ReservationPolicy,
    due_at,
    heartbeat_interval,
    plan_new_end,
    plan_window,
    state,
)
from lablease.domain.windows import Window

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)
H = timedelta(hours=1)
SITE = ReservationPolicy()


def test_without_a_duration_the_site_default_applies():
    window = plan_window(NOW, SITE)
    assert window == Window(NOW, NOW + 24 * H)
    assert plan_window(NOW, ReservationPolicy(default_duration=2 * H)).end == NOW + 2 * H


def test_duration_or_end_sets_the_end():
    assert plan_window(NOW, SITE, duration=4 * H).end == NOW + 4 * H
    assert plan_window(NOW, SITE, end=NOW + 3 * H).end == NOW + 3 * H


def test_advance_reservation_starts_later():
    window = plan_window(NOW, SITE, start=NOW + 48 * H, duration=H)
    assert window == Window(NOW + 48 * H, NOW + 49 * H)


def test_end_and_duration_together_are_refused():
    with pytest.raises(Invalid) as error:
        plan_window(NOW, SITE, end=NOW + H, duration=H)
    assert error.value.field == "duration"


def test_start_in_the_past_is_refused_but_small_clock_skew_means_now():
    with pytest.raises(Invalid) as error:
        plan_window(NOW, SITE, start=NOW - 2 * H)
    assert error.value.field == "start"
    assert plan_window(NOW, SITE, start=NOW - timedelta(seconds=20), duration=H).start == NOW


def test_end_before_start_is_refused():
    with pytest.raises(Invalid):
        plan_window(NOW, SITE, start=NOW + 2 * H, end=NOW + H)


def test_unlimited_only_where_the_site_allows_it():
    with pytest.raises(Invalid, match="not allowed"):
        plan_window(NOW, SITE, duration=UNLIMITED)
    assert plan_window(NOW, ReservationPolicy(allow_unlimited=True), duration=UNLIMITED).end is None


def test_site_maximum():
    site = ReservationPolicy(max_duration=8 * H)
    assert plan_window(NOW, site, duration=8 * H).end == NOW + 8 * H
    with pytest.raises(Invalid, match="maximum of 8h"):
        plan_window(NOW, site, duration=9 * H)
    with pytest.raises(Invalid, match="maximum is 8h"):
        plan_window(NOW, ReservationPolicy(max_duration=8 * H, allow_unlimited=True), duration=UNLIMITED)


def test_a_limited_loan_caps_and_defaults_the_reservation():
    loan_end = NOW + 5 * H
    assert plan_window(NOW, SITE, loan_end=loan_end).end == loan_end
    with pytest.raises(Invalid, match="past the end of your loan"):
        plan_window(NOW, SITE, duration=6 * H, loan_end=loan_end)
    with pytest.raises(Invalid, match="cannot be unlimited"):
        plan_window(NOW, ReservationPolicy(allow_unlimited=True), duration=UNLIMITED, loan_end=loan_end)


def test_extend_by_adds_to_the_current_end_not_to_now():
    window = Window(NOW - H, NOW + 2 * H)
    assert plan_new_end(NOW, SITE, window, extend_by=H) == NOW + 3 * H
    assert plan_new_end(NOW, SITE, window, end=NOW + 10 * H) == NOW + 10 * H


def test_extension_rules():
    window = Window(NOW - H, NOW + 2 * H)
    with pytest.raises(Invalid):
        plan_new_end(NOW, SITE, window)  # neither
    with pytest.raises(Invalid):
        plan_new_end(NOW, SITE, window, end=NOW + H, extend_by=H)  # both
    with pytest.raises(Invalid, match="future"):
        plan_new_end(NOW, SITE, window, end=NOW - timedelta(minutes=1))
    with pytest.raises(Invalid, match="maximum"):
        plan_new_end(NOW, ReservationPolicy(max_duration=4 * H), window, extend_by=2 * H)
    with pytest.raises(Invalid, match="loan"):
        plan_new_end(NOW, SITE, window, extend_by=H, loan_end=NOW + 2 * H)
    with pytest.raises(Invalid, match="no end"):
        plan_new_end(NOW, SITE, Window(NOW - H, None), extend_by=H)


def test_due_is_the_end_or_the_missed_heartbeat_whichever_comes_first():
    assert due_at(NOW + H, None, None) == NOW + H
    assert due_at(NOW + H, timedelta(minutes=5), NOW) == NOW + timedelta(minutes=5)
    assert due_at(NOW + H, timedelta(hours=2), NOW) == NOW + H
    assert due_at(None, None, None) is None


def test_heartbeat_interval_has_a_floor():
    with pytest.raises(Invalid):
        heartbeat_interval(timedelta(seconds=5))
    assert heartbeat_interval(timedelta(minutes=1)) == timedelta(minutes=1)


@pytest.mark.parametrize("start, returned_at, reason, expected", [
    (NOW - H, None, None, "active"),
    (NOW + H, None, None, "upcoming"),
    (NOW - H, NOW, "returned", "returned"),
    (NOW - H, NOW, "expired", "expired"),
    (NOW - H, NOW, "heartbeat_missed", "expired"),
    (NOW - H, NOW, "removed", "returned"),
])
def test_state(start, returned_at, reason, expected):
    assert state(start, returned_at, reason, NOW) == expected


def test_warning_lead_times():
    from lablease.domain.notices import retry_at, warn_at

    day, hour = timedelta(hours=24), timedelta(hours=1)
    assert warn_at(NOW, NOW + 48 * H, day, hour) == NOW + 24 * H
    assert warn_at(NOW, NOW + 47 * H, day, hour) == NOW + 46 * H  # shorter than twice the lead: the short lead
    assert warn_at(NOW, NOW + H, day, hour) is None  # over too soon for a warning to help
    assert warn_at(NOW, None, day, hour) is None
    assert retry_at(NOW, 1, timedelta(seconds=30)) == NOW + timedelta(seconds=30)
    assert retry_at(NOW, 3, timedelta(seconds=30)) == NOW + timedelta(seconds=120)
