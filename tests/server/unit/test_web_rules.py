"""The pure rules behind the web pages: the one action offered on a system, where a sign-in may lead."""
from datetime import datetime, timezone

import pytest

from lablease.domain.actions import Action, Holding, aborted_share, primary_action
from lablease.domain.errors import Invalid
from lablease.domain.permissions import ALLOW, Decision
from lablease.domain.signin import check_new_password, safe_next

NO = Decision(False, "you do not have the reserve permission on this system")
UNTIL = datetime(2026, 11, 22, 14, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize("may_reserve, may_borrow, holding, lent_to, expected", [
    (ALLOW, False, Holding(), None, Action("take", True)),
    (ALLOW, True, Holding("me", UNTIL, mine=True), None, Action("extend", True)),
    (ALLOW, True, Holding("bob", UNTIL), None, Action("take", False, "reserved by bob until 2026-11-22T14:00:00Z")),
    (ALLOW, False, Holding("bob", None), None, Action("take", False, "reserved by bob until it is returned (no end)")),
    (NO, True, Holding(), None, Action("borrow", True)),
    (NO, True, Holding(), "bob", Action("take", False, NO.reason)),
    (NO, False, Holding(), None, Action("take", False, NO.reason)),
])
def test_one_primary_action_by_state_and_rights(may_reserve, may_borrow, holding, lent_to, expected):
    assert primary_action(may_reserve, may_borrow, holding, lent_to) == expected


def test_the_aborted_share_counts_finished_recipes_only():
    assert aborted_share([]) is None and aborted_share(["cancelled"]) is None
    assert aborted_share(["aborted", "completed", "completed", "aborted", "cancelled"]) == 0.5


@pytest.mark.parametrize("target, expected", [
    (None, "/systems"), ("/reservations?x=1", "/reservations?x=1"), ("//evil.example/", "/systems"),
    ("https://evil.example/", "/systems"), ("/\\evil.example", "/systems"), ("systems", "/systems"),
])
def test_a_sign_in_leads_back_to_this_site_only(target, expected):
    assert safe_next(target) == expected


def test_a_new_password_is_long_enough_and_bounded():
    assert check_new_password("eight ch") == "eight ch"
    for bad in ("short", "x" * 1025, "ends with a newline\n"):
        with pytest.raises(Invalid):
            check_new_password(bad)
