"""domain/holds.py: the floor, purpose, maximum hold and partial release rules, as tables."""
from datetime import datetime, timedelta, timezone

import pytest

from lablease.domain import holds
from lablease.domain.errors import Invalid

T = datetime(2026, 11, 22, 12, tzinfo=timezone.utc)
H = timedelta(hours=1)


@pytest.mark.parametrize("floor, idle, member, refused", [
    (0, 0, True, False),   # no floor
    (2, 3, True, False),   # leaves 2
    (2, 2, True, True),    # would leave 1
    (2, 1, True, True),    # already below: still refused
    (2, 1, False, False),  # not one of the idle Automated: takes nothing from the scheduler
    (1, 1, True, True),
])
def test_floor_refusal(floor, idle, member, refused):
    why = holds.floor_refusal("ci", floor, idle, member)
    assert bool(why) is refused
    if refused:
        assert f"floor of {floor}" in why and f"{idle} idle now" in why


@pytest.mark.parametrize("condition, guest, lent, booked, idle", [
    ("automated", False, False, False, True), ("manual", False, False, False, False),
    ("broken", False, False, False, False), ("automated", True, False, False, False),
    ("automated", False, True, False, False), ("automated", False, False, True, False),
])
def test_idle_for_automation(condition, guest, lent, booked, idle):
    assert holds.idle_for_automation(condition, guest, lent, booked) is idle


def test_waits_for_floor_is_the_floor_rule_over_every_pool():
    states = [holds.FloorState("a", 1, 5), holds.FloorState("b", 2, 2)]
    assert holds.waits_for_floor(states, True) and not holds.waits_for_floor(states, False)
    assert not holds.waits_for_floor(states[:1], True)


@pytest.mark.parametrize("value, ok", [(0, True), (3, True), (-1, False), (True, False), (1.5, False), ("2", False)])
def test_check_floor(value, ok):
    if ok:
        assert holds.check_floor(value) == value
    else:
        with pytest.raises(Invalid):
            holds.check_floor(value)


@pytest.mark.parametrize("purpose, required, out", [
    (None, False, None), ("", False, None), (" x ", False, "x"), ("ci", True, "ci"), (None, True, Invalid),
    ("   ", True, Invalid), ("x" * 2001, False, Invalid),
])
def test_check_purpose(purpose, required, out):
    if out is Invalid:
        with pytest.raises(Invalid) as refused:
            holds.check_purpose(purpose, required)
        assert refused.value.field == "purpose"
    else:
        assert holds.check_purpose(purpose, required) == out


@pytest.mark.parametrize("start, end, left", [
    (T - H, T + 2 * H, 2 * H), (T + H, T + 3 * H, 2 * H), (T - 2 * H, T - H, timedelta(0)), (T, None, None),
])
def test_remaining(start, end, left):
    assert holds.remaining(start, end, T) == left


@pytest.mark.parametrize("limit, total, asked, refused", [
    (None, None, None, False), (8 * H, 5 * H, 3 * H, False), (8 * H, 5 * H, 4 * H, True),
    (8 * H, None, H, True), (8 * H, timedelta(0), None, True), (8 * H, timedelta(0), 8 * H, False),
])
def test_hold_refusal(limit, total, asked, refused):
    why = holds.hold_refusal(limit, total, asked)
    assert bool(why) is refused
    if refused:
        assert "8h" in why


def test_total_hold():
    assert holds.total_hold([H, 2 * H]) == 3 * H and holds.total_hold([]) == timedelta(0)
    assert holds.total_hold([H, None]) is None


@pytest.mark.parametrize("fqdn, state, why", [
    ("a", "r", None), ("a", "w", None), ("a", "E", None), ("a", "x", "nothing to give back"),
    ("z", "r", "not held"), ("b", "r", "in use"),
])
def test_release_refusal(fqdn, state, why):
    found = holds.release_refusal(fqdn, {"a", "b", "c"}, {"b"}, state)
    assert (found is None) if why is None else (why in found)


@pytest.mark.parametrize("asked, ok", [
    (["A"], True), ([], False), (["a", "a"], False), (["a", "b", "c"], False), (["a", "b"], True),
])
def test_check_release(asked, ok):
    if ok:
        assert holds.check_release(asked, ["a", "b", "c"]) == [a.lower() for a in asked]
    else:
        with pytest.raises(Invalid):
            holds.check_release(asked, ["a", "b", "c"])
