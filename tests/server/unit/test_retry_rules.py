"""A retried request must be the same request: what counts as the same."""
from datetime import datetime, timedelta, timezone

import pytest

from lablease.domain.errors import Conflict
from lablease.domain.retries import (
    ReserveAsked,
    ReserveMade,
    document_differences,
    refuse_changed_retry,
    reserve_differences,
)

T0 = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)
H = timedelta(hours=1)
MADE = ReserveMade("s1.lab.test", T0, T0, T0 + H, False, None, None)


def test_a_retry_leaving_out_start_or_giving_one_that_became_now_is_the_same():
    assert reserve_differences(ReserveAsked("s1.lab.test", duration=H), MADE) == []
    assert reserve_differences(ReserveAsked("S1.lab.test", start=T0 - timedelta(seconds=30), end=T0 + H), MADE) == []
    assert reserve_differences(ReserveAsked("s1.lab.test"), MADE) == []  # the site default, whatever it gave


def test_what_differs_is_named_with_both_values():
    asked = ReserveAsked("s2.lab.test", start=T0 + H, duration="unlimited", heartbeat=timedelta(minutes=5))
    assert reserve_differences(asked, MADE) == [
        "system (first s1.lab.test, now s2.lab.test)", "start (first 2026-11-22T12:00:00Z, now 2026-11-22T13:00:00Z)",
        "duration (first limited, now unlimited)", "heartbeat (first none, now 5m)"]


def test_a_returned_reservations_end_is_not_compared_but_the_rest_is():
    returned = ReserveMade("s1.lab.test", T0, T0, T0 + timedelta(minutes=5), False, None, None, returned=True)
    assert reserve_differences(ReserveAsked("s1.lab.test", duration=H), returned) == []
    assert reserve_differences(ReserveAsked("s2.lab.test", duration=H), returned) == [
        "system (first s1.lab.test, now s2.lab.test)"]


def test_documents_differ_at_named_places():
    first = {"recipe_sets": [{"recipes": [{"force": "a"}], "priority": "Normal"}]}
    again = {"recipe_sets": [{"recipes": [{"force": "b"}], "priority": "High"}]}
    assert document_differences(first, again) == ["recipe_sets[0].priority", "recipe_sets[0].recipes[0].force"]
    assert document_differences(first, {"recipe_sets": []}) == ["recipe_sets"]
    assert document_differences(first, first) == []


def test_a_changed_retry_is_a_conflict_naming_at_most_a_few_places():
    refuse_changed_retry("r", "job 1", [])
    with pytest.raises(Conflict) as error:
        refuse_changed_retry("r", "job 1", [f"p{i}" for i in range(8)])
    assert "p4; 3 more" in error.value.detail and len(error.value.extra["differs"]) == 8
