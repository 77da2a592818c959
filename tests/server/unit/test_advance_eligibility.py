"""Which systems an advance reservation may get, and which changes to a granted one are refused."""
import pytest

from lablease.domain.advance import SystemFacts, breaks_on_purpose, ineligible, problems

MATCH = (True, None)


def system(**facts):
    return SystemFacts(**{"fqdn": "a.lab.test", "condition": "automated", "lab": "lab1", "pools": frozenset({"fast"}),
                          "granted_lab": "lab1", **facts})


@pytest.mark.parametrize("facts, requirement, pools, reason", [
    ({}, MATCH, [], None),
    ({"condition": "manual"}, MATCH, [], None),
    ({"condition": "broken"}, MATCH, [], "broken"),
    ({"condition": "removed"}, MATCH, [], "removed"),
    ({}, (False, "memory >= 8192"), [], "memory >= 8192"),
    ({}, MATCH, ["slow"], "not in the pools asked for"),
    ({}, MATCH, ["slow", "fast"], None),
    ({"locked_out": ("bob",)}, MATCH, [], "an ACL user may not use it"),
    # the first reason wins: condition, then requirements, then pools, then the ACL
    ({"condition": "broken", "locked_out": ("bob",)}, (False, "arch = s390x"), ["slow"], "broken"),
    ({"locked_out": ("bob",)}, (False, "arch = s390x"), ["slow"], "arch = s390x"),
])
def test_eligibility(facts, requirement, pools, reason):
    assert ineligible(system(**facts), requirement, pools) == reason


def test_a_healthy_reservation_has_no_problems():
    assert problems([system(), system(fqdn="b.lab.test")], ["fast"]) == []


@pytest.mark.parametrize("facts, found", [
    ({"condition": "broken"}, [("broken", "a.lab.test is broken")]),
    ({"condition": "removed"}, [("removed", "a.lab.test is removed")]),
    ({"lab": "lab2"}, [("lab", "a.lab.test left lab lab1")]),
    ({"lab": None}, [("lab", "a.lab.test left lab lab1")]),
    ({"pools": frozenset()}, [("pool", "a.lab.test is no longer in pool(s) fast")]),
    ({"locked_out": ("bob", "carol")}, [("acl", "bob, carol may no longer use a.lab.test")]),
    # a broken system's other problems do not matter: it is unusable anyway
    ({"condition": "broken", "lab": "lab2"}, [("broken", "a.lab.test is broken")]),
])
def test_problems_of_a_held_system(facts, found):
    assert problems([system(**facts)], ["fast"]) == found


def test_without_pools_asked_for_pool_membership_does_not_matter():
    assert problems([system(pools=frozenset())], []) == []


def test_only_new_problems_made_on_purpose_are_refused():
    found = [("broken", "a is broken"), ("lab", "b left lab x"), ("removed", "c is removed"),
             ("pool", "d is no longer in pool(s) p"), ("acl", "bob may no longer use e")]
    # a breakdown or a lab move just happens: the AR goes into error, nothing is refused
    assert breaks_on_purpose(found, []) == ["c is removed", "d is no longer in pool(s) p", "bob may no longer use e"]
    # problems the AR already knows of (it is in error for them) are not refused again
    assert breaks_on_purpose(found, ["c is removed", "bob may no longer use e"]) == ["d is no longer in pool(s) p"]
    assert breaks_on_purpose([("broken", "a is broken")], []) == []
