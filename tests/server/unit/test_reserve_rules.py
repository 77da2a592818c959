"""domain/reserve.py: what a reserve decides from its facts, as a table (no database, no clock)."""
from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from lablease.domain import reserve as decide
from lablease.domain.errors import BookingConflict, Conflict, Forbidden, Invalid, NotFound
from lablease.domain.permissions import Actor, Permission, Rule
from lablease.domain.reservations import ReservationPolicy
from lablease.domain.retries import ReserveAsked

NOW = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
H = timedelta(hours=1)
ALICE = Actor(2, "alice", group_ids=frozenset({7}))
OPEN = (Rule(Permission.VIEW), Rule(Permission.RESERVE))
SYSTEM = decide.SystemFacts(1, "s1.lab.test", 10, "s1.lab.test", "manual", owner_id=None, guest=False, rules=OPEN)
AR = decide.AdvanceFacts(5, owner_id=9, state="r", error_handling="soft", start=NOW, end=NOW + 8 * H,
                         acl=("@testers",), slot_resource_id=55, slot_name="ar:5:s1.lab.test")
POLICY = ReservationPolicy(default_duration=24 * H, max_duration=48 * H)
WARN = (24 * H, H)


def asked(request_id=None, **fields) -> decide.Asked:
    return decide.Asked(ReserveAsked(fields.pop("system", "s1.lab.test"), **fields), request_id)


def made(**fields) -> decide.Made:
    values = dict(id=41, system="s1.lab.test", user="alice", kind="manual", start=NOW, end=NOW + 2 * H,
                  created_at=NOW, request_id="r-1")
    return decide.Made(**{**values, **fields})


def facts(system=SYSTEM, **fields) -> decide.ReserveFacts:
    return decide.ReserveFacts(fields.pop("actor", ALICE), system, **fields)


# (case, facts, asked, what plan answers: a Planned's (resource, start, end) or the refusal's class and words)
PLANS = [
    ("the site's default window", facts(), asked(), (10, NOW, NOW + 24 * H)),
    ("a duration", facts(), asked(duration=2 * H), (10, NOW, NOW + 2 * H)),
    ("no such system", facts(None), asked(system="nope"), (NotFound, "no system named nope")),
    ("a system it may not view is not found", facts(replace(SYSTEM, rules=())), asked(), (NotFound, "s1.lab.test")),
    ("a guest recipe's machine", facts(replace(SYSTEM, guest=True)), asked(), (Conflict, "guest recipe")),
    ("no reserve rule", facts(replace(SYSTEM, rules=(Rule(Permission.VIEW),))), asked(),
     (Forbidden, "reserve permission")),
    ("the rule for its group", facts(replace(SYSTEM, rules=(Rule(Permission.VIEW), Rule(Permission.RESERVE, group_id=7)))),
     asked(), (10, NOW, NOW + 24 * H)),
    ("automated, not lent", facts(replace(SYSTEM, condition="automated")), asked(), (Forbidden, "the scheduler gives it to jobs")),
    ("removed", facts(replace(SYSTEM, condition="removed")), asked(), (Forbidden, "removed")),
    ("lent to another", facts(replace(SYSTEM, loan_recipient_id=3)), asked(), (Forbidden, "lent to another")),
    ("a loan caps the default end", facts(replace(SYSTEM, condition="automated", loan_recipient_id=2,
                                                  loan_end=NOW + 3 * H)), asked(), (10, NOW, NOW + 3 * H)),
    ("nor may it pass the loan", facts(replace(SYSTEM, loan_recipient_id=2, loan_end=NOW + 3 * H)),
     asked(duration=4 * H), (Invalid, "end of your loan")),
    ("past the site's maximum", facts(), asked(duration=49 * H), (Invalid, "maximum")),
    ("a heartbeat too short", facts(), asked(heartbeat=timedelta(seconds=5)), (Invalid, "heartbeat")),
    ("an AR's ACL grants the use, until its end, on its calendar",
     facts(replace(SYSTEM, rules=(Rule(Permission.VIEW),)), advance=AR, group_names=frozenset({"testers"})),
     asked(advance_reservation=5), (55, NOW, NOW + 8 * H)),
    ("not in the AR's ACL", facts(advance=AR), asked(advance_reservation=5), (Forbidden, "ACL")),
    ("the AR's owner", facts(advance=replace(AR, owner_id=2)), asked(advance_reservation=5, duration=H),
     (55, NOW, NOW + H)),
    ("no such AR", facts(), asked(advance_reservation=5), (Invalid, "no active advance reservation 5")),
    ("an AR that ended", facts(advance=replace(AR, owner_id=2, state="x")), asked(advance_reservation=5),
     (Invalid, "no active")),
    ("an AR without the system", facts(advance=replace(AR, owner_id=2, slot_resource_id=None)),
     asked(advance_reservation=5), (Invalid, "does not hold s1.lab.test")),
    ("an AR in hard error", facts(advance=replace(AR, owner_id=2, state="E", error_handling="hard")),
     asked(advance_reservation=5), (Conflict, "hard error")),
    ("past the AR's end", facts(advance=replace(AR, owner_id=2)), asked(advance_reservation=5, duration=9 * H),
     (Invalid, "must fit its window")),
    ("a retry of the same request", facts(None, previous=made()),
     asked("r-1", start=NOW, end=NOW + 2 * H), decide.Retry(made())),
    ("a different request with the same id", facts(None, previous=made()),
     asked("r-1", system="s2.lab.test", end=NOW + 2 * H), (Conflict, "system (first s1.lab.test, now s2.lab.test)")),
]


@pytest.mark.parametrize("case, given, request_, expected", PLANS, ids=[p[0] for p in PLANS])
def test_plan(case, given, request_, expected):
    outcome = decide.plan(given, request_, POLICY, NOW, WARN)
    if isinstance(expected, decide.Retry):
        assert outcome == expected
    elif isinstance(expected[0], type):
        assert isinstance(outcome, expected[0]) and expected[1] in outcome.detail, outcome
    else:
        assert isinstance(outcome, decide.Planned), outcome
        assert (outcome.resource_id, outcome.window.start, outcome.window.end) == expected


def test_plan_warns_before_the_end():
    assert decide.plan(facts(), asked(duration=48 * H), POLICY, NOW, WARN).warn_at == NOW + 24 * H
    assert decide.plan(facts(), asked(duration=3 * H), POLICY, NOW, WARN).warn_at == NOW + 2 * H
    assert decide.plan(facts(), asked(duration=H), POLICY, NOW, WARN).warn_at is None


def planned(**fields):
    return decide.plan(facts(), asked(**fields), POLICY, NOW, WARN)


def test_book_refuses_an_overlap_naming_its_holder():
    latest = decide.LatestBooking(3, NOW + H, NOW + 5 * H, "reservation", "bob", ref=17)
    outcome = decide.book(planned(duration=2 * H), facts(), asked(duration=2 * H), NOW, latest)
    assert isinstance(outcome, BookingConflict)
    assert outcome.extra["conflict"]["user"] == "bob" and outcome.extra["conflict"]["id"] == 17


def test_book_writes_beside_a_booking_that_ends_at_its_start():
    latest = decide.LatestBooking(3, NOW - H, NOW, "reservation", "bob")
    request_ = asked("r-9", duration=2 * H, heartbeat=timedelta(minutes=5), return_loan=True)
    outcome = decide.book(decide.plan(facts(), request_, POLICY, NOW, WARN), facts(), request_, NOW, latest)
    assert isinstance(outcome, decide.ReserveWrite)
    assert outcome.booking == dict(resource_id=10, start_at=NOW, end_at=NOW + 2 * H, quantity=1, exclusive=True,
                                   kind="reservation", user_id=2, created_at=NOW)
    row = outcome.reservation
    assert (row["heartbeat_seconds"], row["due_at"], row["request_id"], row["return_loan"]) == (
        300, NOW + timedelta(minutes=5), "r-9", True)
    assert [(a["object_type"], a["object_id"], a["new"]) for a in outcome.activity(41, 2, NOW)] == [
        ("reservation", "41", "s1.lab.test"), ("system", "s1.lab.test", "41 until 2026-03-02T11:00:00Z")]
    shown = decide.answer(outcome.made(41), NOW)
    assert (shown["id"], shown["state"], shown["seconds_left"], shown["heartbeat"]) == (41, "active", 7200, 300)


def test_book_answers_a_retry_that_raced_its_first_attempt():
    request_ = asked("r-1", start=NOW, end=NOW + 2 * H)
    outcome = decide.book(decide.plan(facts(), request_, POLICY, NOW, WARN), facts(), request_, NOW, None,
                          raced=made())
    assert outcome == decide.Retry(made())
