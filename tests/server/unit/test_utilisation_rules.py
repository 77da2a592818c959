"""Hour-by-hour utilisation of one system: precedence, creation, removal, and the figure cards."""
from datetime import datetime, timedelta, timezone

import pytest

from lablease.domain import utilisation as u
from lablease.domain.errors import Invalid

T0 = datetime(2026, 3, 4, 10, 0, tzinfo=timezone.utc)
M = timedelta(minutes=1)


def test_recipe_beats_manual_and_broken_beats_both():
    booked = [u.Booked("reservation", T0, T0 + 40 * M), u.Booked("recipe", T0 + 30 * M, T0 + 50 * M)]
    [hour] = u.seconds_by_hour(T0, 1, T0 - M, "automated", [(T0 + 45 * M, "broken")], booked)
    assert hour == {"manual": 30 * 60, "recipe": 15 * 60, "broken": 15 * 60, "idle": 0}


def test_time_splits_across_hours_and_open_bookings_run_to_the_end():
    hours = u.seconds_by_hour(T0, 3, T0 - M, "manual", [], [u.Booked("reservation", T0 + 90 * M, None)])
    assert [h["idle"] for h in hours] == [3600, 1800, 0]
    assert [h["manual"] for h in hours] == [0, 1800, 3600]


def test_before_creation_and_while_removed_nothing_counts():
    hours = u.seconds_by_hour(T0, 2, T0 + 20 * M, "automated", [(T0 + 80 * M, "removed")], [])
    assert [sum(h.values()) for h in hours] == [40 * 60, 20 * 60]
    assert u.seconds_by_hour(T0, 1, T0 + 2 * u.HOUR, "automated", [], []) == [dict.fromkeys(u.CATEGORIES, 0.0)]


def test_figures_are_shares_of_the_counted_time():
    assert u.figures({"recipe": 1800, "manual": 900, "idle": 600, "broken": 300}) == {
        "busy": 0.75, "recipe": 0.5, "broken": 0.0833, "system_hours": 1.0}
    assert u.figures(dict.fromkeys(u.CATEGORIES, 0.0))["busy"] == 0.0


def test_periods_are_checked():
    with pytest.raises(Invalid, match="day, hour"):
        u.check_period(T0, T0 + u.HOUR, "week")
    with pytest.raises(Invalid, match="must be after from"):
        u.check_period(T0, T0, "day")
    with pytest.raises(Invalid, match="at most 93 days"):
        u.check_period(T0, T0 + timedelta(days=100), "hour")
    assert u.bucket_start(T0 + 5 * u.HOUR, "day") == T0.replace(hour=0)


def test_stacked_columns_share_one_scale_and_stack_from_the_bottom():
    buckets = [{"at": "d1", "recipe": 50, "manual": 0, "idle": 50, "broken": 0},
               {"at": "d2", "recipe": 25, "manual": 25, "idle": 0, "broken": 0}]
    first, second = u.stacked(buckets, 200, 100)
    assert [(s.category, s.y, s.height) for s in first.segments] == [("recipe", 50, 50), ("idle", 0, 50)]
    assert [(s.category, s.y, s.height) for s in second.segments] == [("recipe", 75, 25), ("manual", 50, 25)]
    assert (first.x, first.width, second.x) == (10, 80, 110)
    assert u.stacked([], 100, 100) == []
