"""The permission decision, as a table: permission x role x condition x loan."""
import pytest

from lablease.domain.permissions import (
    Actor,
    Permission,
    Rule,
    SiteAction,
    SystemAccess,
    decide,
    decide_site,
    default_rules,
    may_manage_reservation,
)

ADMIN = Actor(1, "root", is_admin=True)
OWNER = Actor(2, "owner")
ALICE = Actor(3, "alice", group_ids=frozenset({10}))
BOB = Actor(4, "bob")
ACTORS = {"admin": ADMIN, "owner": OWNER, "alice": ALICE, "bob": BOB}


def system(condition="manual", rules=default_rules(), lent_to=None):
    return SystemAccess(owner_id=OWNER.id, condition=condition, rules=tuple(rules), loan_recipient_id=lent_to)


# (who, condition, lent to, may reserve)
RESERVE_TABLE = [
    ("admin", "manual", None, True),
    ("owner", "manual", None, True),
    ("alice", "manual", None, True),
    ("alice", "automated", None, False),
    ("alice", "broken", None, False),
    ("alice", "removed", None, False),
    ("admin", "removed", None, False),
    ("admin", "automated", None, True),
    ("alice", "automated", ALICE.id, True),   # lent to alice: she may reserve it by hand
    ("bob", "manual", ALICE.id, False),        # a loan is exclusive
    ("owner", "manual", ALICE.id, True),
    ("admin", "automated", ALICE.id, True),
]


# what a refused user is told (the 403's detail): what stands in the way of this system
REFUSALS = {
    ("alice", "automated", None): "the system is automated: the scheduler gives it to jobs, and only the user it is "
                                  "lent to may reserve it by hand",
    ("alice", "broken", None): "the system is broken: it cannot be reserved until its owner or an administrator "
                               "repairs it",
    ("alice", "removed", None): "the system is removed",
    ("admin", "removed", None): "the system is removed",
    ("bob", "manual", ALICE.id): "the system is lent to another user",
}


@pytest.mark.parametrize("who, condition, lent_to, allowed", RESERVE_TABLE)
def test_reserve(who, condition, lent_to, allowed):
    decision = decide(ACTORS[who], Permission.RESERVE, system(condition, lent_to=lent_to))
    assert decision.allowed is allowed, decision.reason
    assert decision.reason == ("allowed" if allowed else REFUSALS[who, condition, lent_to])


def test_reserve_needs_a_rule_for_others():
    no_reserve = system(rules=[Rule(Permission.VIEW)])
    assert not decide(ALICE, Permission.RESERVE, no_reserve)
    assert decide(ALICE, Permission.RESERVE, system(rules=[Rule(Permission.RESERVE, group_id=10)]))
    assert not decide(BOB, Permission.RESERVE, system(rules=[Rule(Permission.RESERVE, group_id=10)]))
    assert decide(BOB, Permission.RESERVE, system(rules=[Rule(Permission.RESERVE, user_id=BOB.id)]))


@pytest.mark.parametrize("permission", [p for p in Permission if p is not Permission.RESERVE])
@pytest.mark.parametrize("who, allowed", [("admin", True), ("owner", True), ("alice", False), ("bob", False)])
def test_other_permissions_by_default(permission, who, allowed):
    expected = True if permission is Permission.VIEW else allowed
    assert decide(ACTORS[who], permission, system()).allowed is expected


def test_a_rule_grants_one_permission_only():
    access = system(rules=[Rule(Permission.EDIT_SYSTEM, user_id=ALICE.id)])
    assert decide(ALICE, Permission.EDIT_SYSTEM, access)
    assert not decide(ALICE, Permission.EDIT_POLICY, access)
    assert not decide(ALICE, Permission.VIEW, access)


def test_site_actions_are_for_admins():
    for action in SiteAction:
        assert decide_site(ADMIN, action)
        assert not decide_site(ALICE, action)
        assert "administrators" in decide_site(ALICE, action).reason


def test_managing_a_reservation():
    access = system()
    assert may_manage_reservation(ALICE, ALICE.id, access)
    assert may_manage_reservation(ADMIN, ALICE.id, access)
    assert may_manage_reservation(OWNER, ALICE.id, access)
    assert not may_manage_reservation(BOB, ALICE.id, access)
