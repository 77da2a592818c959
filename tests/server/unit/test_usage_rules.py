"""Usage reports count time only while the system existed."""
from datetime import datetime, timedelta, timezone

import pytest

from lablease.domain.errors import Invalid
from lablease.domain.usage import Change, check_period, share_busy, time_in_states

T0 = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)
H = timedelta(hours=1)


def test_time_before_creation_is_not_idle():
    seconds = time_in_states(T0 + 2 * H, "idle", "automated", [Change(T0 + 3 * H, "usage", "running")], T0, T0 + 4 * H)
    assert seconds["idle"] == 3600 and seconds["running"] == 3600 and sum(seconds.values()) == 7200


def test_time_while_removed_is_not_counted_and_restoring_counts_again():
    changes = [Change(T0 + H, "condition", "removed"), Change(T0 + 3 * H, "condition", "manual")]
    seconds = time_in_states(T0, "idle", "manual", changes, T0, T0 + 4 * H)
    assert seconds["idle"] == 2 * 3600


def test_a_system_created_after_the_period_counts_nothing():
    seconds = time_in_states(T0 + 5 * H, "idle", "manual", [], T0, T0 + 4 * H)
    assert sum(seconds.values()) == 0 and share_busy(seconds) == 0.0


def test_from_must_come_before_until():
    with pytest.raises(Invalid) as error:
        check_period(T0 + H, T0)
    assert error.value.field == "from"
    with pytest.raises(Invalid):
        check_period(T0, T0)
