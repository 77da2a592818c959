"""domain/lease.py: what extend, heartbeat and return write, or why they refuse — as tables."""
from dataclasses import replace
from datetime import datetime, timedelta, timezone

import pytest

from lablease.domain.errors import Conflict, Invalid
from lablease.domain.lease import (
    Blocked,
    Lease,
    WarnLeads,
    decide_extend,
    decide_heartbeat,
    decide_return,
    decide_set_heartbeat,
    extends_here,
    may_manage,
    needs_cascade,
    wakes_worker,
)
from lablease.domain.permissions import Actor
from lablease.domain.reservations import ReservationPolicy

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)
H = timedelta(hours=1)
HOLDER, OWNER, OTHER, ADMIN = Actor(7, "alice"), Actor(8, "olga"), Actor(9, "bob"), Actor(1, "root", is_admin=True)
# alice holds s1 from an hour ago for three hours; her booking starts with it.
HELD = Lease(id=5, user_id=7, holder="alice", system_id=3, fqdn="s1.lab.test", owner_id=8, kind="manual",
             start_at=NOW - H, end_at=NOW + 2 * H, returned_at=None, return_reason=None, return_loan=False,
             heartbeat_seconds=None, last_heartbeat_at=None, due_at=NOW + 2 * H, request_id=None, ar_id=None,
             booking_id=11, booking_start=NOW - H, booking_end=NOW + 2 * H)
SITE = ReservationPolicy()
LEADS = WarnLeads(24 * H, H)


@pytest.mark.parametrize("lease, asked, new_end, next_start", [
    (HELD, {"extend_by": H}, NOW + 3 * H, None),
    (HELD, {"end": NOW + 30 * H}, NOW + 30 * H, None),
    (HELD, {"end": NOW + H}, NOW + H, None),  # shortening is an extension too
    (replace(HELD, next_start=NOW + 3 * H), {"extend_by": H}, NOW + 3 * H, NOW + 3 * H),  # up to the next: fits
    (replace(HELD, loan_end=NOW + 4 * H), {"extend_by": 2 * H}, NOW + 4 * H, None),  # up to the loan's end
])
def test_an_extension_writes_the_new_end_everywhere(lease, asked, new_end, next_start):
    change = decide_extend(lease, NOW, SITE, LEADS, **asked)
    assert change.reservation["end_at"] == new_end and change.booking_end == ("end", new_end)
    assert change.reservation["due_at"] == new_end
    assert change.activity == [("reservation", 5, "extended", "end", NOW + 2 * H, new_end)]
    assert not change.freed


def test_an_extension_moves_the_warning_and_the_missed_heartbeat_deadline():
    beating = replace(HELD, heartbeat_seconds=600, last_heartbeat_at=NOW)
    change = decide_extend(beating, NOW, SITE, LEADS, end=NOW + 49 * H)
    assert change.reservation["warn_at"] == NOW + 25 * H  # a day before the end of a long one
    assert change.reservation["due_at"] == NOW + timedelta(minutes=10)  # the heartbeat is due first
    assert decide_extend(HELD, NOW, SITE, None, extend_by=H).reservation["warn_at"] is None  # no site settings


@pytest.mark.parametrize("lease, asked, refusal", [
    (replace(HELD, next_start=NOW + 2 * H), {"extend_by": H}, Blocked(NOW + 3 * H)),
    (replace(HELD, next_start=NOW + 2 * H + timedelta(seconds=1)), {"extend_by": H}, Blocked(NOW + 3 * H)),
])
def test_an_extension_into_the_next_booking_is_blocked(lease, asked, refusal):
    assert decide_extend(lease, NOW, SITE, LEADS, **asked) == refusal


@pytest.mark.parametrize("lease, policy, asked, error, field", [
    (replace(HELD, returned_at=NOW - H / 2), SITE, {"extend_by": H}, Conflict, None),
    (HELD, ReservationPolicy(max_duration=4 * H), {"extend_by": 2 * H}, Invalid, "extend_by"),
    (replace(HELD, loan_end=NOW + 3 * H), SITE, {"end": NOW + 4 * H}, Invalid, "end"),
    (HELD, SITE, {"end": NOW - H / 2}, Invalid, "end"),
    (HELD, SITE, {}, Invalid, "end"),
])
def test_an_extension_is_refused(lease, policy, asked, error, field):
    with pytest.raises(error) as refused:
        decide_extend(lease, NOW, policy, LEADS, **asked)
    assert field is None or refused.value.field == field


def test_a_heartbeat_moves_the_deadline_from_now_or_the_start():
    beating = replace(HELD, heartbeat_seconds=600, last_heartbeat_at=NOW - H)
    assert decide_heartbeat(beating, NOW).reservation == {"last_heartbeat_at": NOW,
                                                          "due_at": NOW + timedelta(minutes=10)}
    upcoming = replace(beating, start_at=NOW + H)
    assert decide_heartbeat(upcoming, NOW).reservation["last_heartbeat_at"] == NOW + H
    assert decide_heartbeat(beating, NOW).activity == []  # a heartbeat is not history


@pytest.mark.parametrize("lease, error", [
    (HELD, Invalid),  # made without a heartbeat
    (replace(HELD, heartbeat_seconds=600, returned_at=NOW), Conflict),
])
def test_a_heartbeat_is_refused(lease, error):
    with pytest.raises(error):
        decide_heartbeat(lease, NOW)


@pytest.mark.parametrize("interval, seconds, last, due", [
    (timedelta(minutes=5), 300, NOW, NOW + timedelta(minutes=5)),
    (None, None, None, NOW + 2 * H),  # stopped: only the end is due
])
def test_setting_the_heartbeat(interval, seconds, last, due):
    change = decide_set_heartbeat(replace(HELD, heartbeat_seconds=60), NOW, interval)
    assert change.reservation == {"heartbeat_seconds": seconds, "last_heartbeat_at": last, "due_at": due}
    assert change.activity == [("reservation", 5, "changed", "heartbeat", 60, seconds)]
    with pytest.raises(Invalid):
        decide_set_heartbeat(HELD, NOW, timedelta(seconds=5))


@pytest.mark.parametrize("lease, reservation, booking", [
    # begun: the booking is cut at now
    (HELD, {"end_at": NOW}, ("end", NOW)),
    # not begun: the booking goes, the reservation ends where it would have started
    (replace(HELD, start_at=NOW + H, booking_start=NOW + H), {"end_at": NOW + H, "booking_id": None}, ("delete",)),
    # open-ended
    (replace(HELD, end_at=None, booking_end=None), {"end_at": NOW}, ("end", NOW)),
])
def test_a_return_cuts_the_booking_and_frees_the_system(lease, reservation, booking):
    change = decide_return(lease, NOW)
    assert change.reservation == {"returned_at": NOW, "return_reason": "returned", "due_at": None,
                                  "warn_at": None, **reservation}
    assert change.booking_end == booking and change.freed
    assert change.activity == [("reservation", 5, "returned", "state", "active", "returned"),
                               ("system", "s1.lab.test", "returned", "reservation", 5, None)]
    with pytest.raises(Conflict):
        decide_return(replace(lease, returned_at=NOW), NOW)


@pytest.mark.parametrize("lease, actor, cascade", [
    (HELD, HOLDER, False),
    (HELD, OWNER, True),  # the holder is told
    (replace(HELD, kind="recipe"), HOLDER, True),
    (replace(HELD, ar_id=2), HOLDER, True),
    (replace(HELD, return_loan=True), HOLDER, True),
    (replace(HELD, system_busy=True), HOLDER, True),  # power off, netboot, installation
    (replace(HELD, booking_id=None), HOLDER, True),
])
def test_which_returns_need_the_cascade(lease, actor, cascade):
    assert needs_cascade(lease, actor) is cascade


@pytest.mark.parametrize("actor, allowed", [(HOLDER, True), (OWNER, True), (ADMIN, True), (OTHER, False)])
def test_who_may_change_it(actor, allowed):
    assert may_manage(actor, HELD) is allowed


def test_only_a_booking_on_the_systems_own_calendar_extends_here():
    assert extends_here(HELD) and not extends_here(replace(HELD, ar_id=2))


def test_only_a_change_that_may_bring_a_deadline_sooner_wakes_the_worker():
    beating = replace(HELD, heartbeat_seconds=600, last_heartbeat_at=NOW - H, due_at=NOW - H + timedelta(minutes=10))
    assert not wakes_worker(beating, decide_heartbeat(beating, NOW))  # the deadline only moves later
    shorter = replace(HELD, heartbeat_seconds=3600, last_heartbeat_at=NOW, due_at=NOW + H)
    assert wakes_worker(shorter, decide_set_heartbeat(shorter, NOW, timedelta(minutes=5)))
    assert wakes_worker(HELD, decide_extend(HELD, NOW, SITE, LEADS, end=NOW + H))  # sooner
    assert wakes_worker(HELD, decide_extend(HELD, NOW, SITE, LEADS, extend_by=H))  # its warning is not read here
    assert wakes_worker(HELD, decide_return(HELD, NOW))
