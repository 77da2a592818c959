"""Reserving a system: everything a reserve decides, from facts read beforehand.

A reserve is read, decide, write. The facts (`ReserveFacts`) are read in a few
statements; `plan` decides everything but the calendar (who may, which window,
which calendar it books on) and `book` decides the calendar from the one
booking that can conflict, read under the calendar's lock once the window is
known. Both return what to do (`Planned`, `ReserveWrite`, `Retry`) or a
refusal: the DomainError the API answers, returned rather than raised so a
table of cases can check them. No I/O, no clock: `now` is an argument.

A new rule is a new fact and a new check in `plan` (or `book`, if it needs the
calendar under the lock).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from . import reservations as rules
from . import retries
from .advance import FINAL, in_acl
from .calendar import Booking, exclusive_conflict
from .errors import BookingConflict, Conflict, DomainError, Forbidden, Holder, Invalid, NotFound
from .guests import not_for_people
from .notices import warn_at
from .permissions import Actor, Permission, Rule, SystemAccess, decide
from .times import format_time
from .windows import Window

Refusal = DomainError  # the refusal a request gets (403, 404, 409, 422...), returned by the deciders


@dataclass(frozen=True)
class SystemFacts:
    """The system named, with what decides access to it: its rules (or its policy pool's) and its loan."""

    id: int
    fqdn: str
    resource_id: int
    resource_name: str  # what a conflict names
    condition: str
    owner_id: int | None
    guest: bool
    rules: tuple[Rule, ...] = ()
    loan_recipient_id: int | None = None
    loan_end: datetime | None = None
    floored: bool = False  # in a pool keeping a floor of idle Automated systems (checked under the lock)

    def access(self, with_loan: bool = True) -> SystemAccess:
        return SystemAccess(self.owner_id, self.condition, self.rules,
                            self.loan_recipient_id if with_loan else None)


@dataclass(frozen=True)
class AdvanceFacts:
    """The advance reservation named in the request, and its slot for the system (None: it does not hold it)."""

    id: int
    owner_id: int
    state: str
    error_handling: str
    start: datetime
    end: datetime
    acl: tuple[str, ...] = ()
    slot_resource_id: int | None = None
    slot_name: str | None = None


@dataclass(frozen=True)
class Made:
    """A reservation as written (or read back): everything its answer shows."""

    id: int
    system: str
    user: str
    kind: str
    start: datetime
    end: datetime | None
    created_at: datetime
    return_loan: bool = False
    heartbeat_seconds: int | None = None
    last_heartbeat: datetime | None = None
    due: datetime | None = None
    returned_at: datetime | None = None
    return_reason: str | None = None
    request_id: str | None = None
    advance_reservation: int | None = None
    purpose: str | None = None


@dataclass(frozen=True)
class ReserveFacts:
    """What a reserve decides on. `previous`: the caller's reservation with the same request_id."""

    actor: Actor
    system: SystemFacts | None
    previous: Made | None = None
    advance: AdvanceFacts | None = None
    group_names: frozenset[str] = frozenset()  # the actor's groups by name, for an AR's @group ACL entries


@dataclass(frozen=True)
class ReserveRequest:
    """A reserve as the caller put it (POST /reservations, a page's Reserve, Beaker's system-reserve), parsed:
    what services/reserve.reserve takes. None: not given."""

    system: str
    start: datetime | None = None
    end: datetime | None = None
    duration: timedelta | str | None = None  # "unlimited" where the caller may ask for no end
    return_loan: bool = False
    heartbeat: timedelta | None = None
    request_id: str | None = None
    advance_reservation: int | None = None
    purpose: str | None = None
    force: bool = False  # take an idle system from a pool's floor (docs/access.md)
    healthy_within: timedelta | None = None  # a passed health check this recent (docs/health.md)

    def asked(self, purpose: str | None) -> Asked:
        """What the decision compares with an earlier request, with the purpose as the site's rule left it."""
        return Asked(retries.ReserveAsked(self.system, self.start, self.end, self.duration, self.return_loan,
                                          self.heartbeat, self.advance_reservation), self.request_id, purpose)


@dataclass(frozen=True)
class Asked:
    """The request: what retries.ReserveAsked compares, and its request_id."""

    what: retries.ReserveAsked
    request_id: str | None = None
    purpose: str | None = None  # already checked against the site's require_purpose (domain/holds.py)


@dataclass(frozen=True)
class Retry:
    """A retry of an earlier request: answer the reservation it made (200, nothing written)."""

    made: Made


@dataclass(frozen=True)
class Planned:
    """Everything decided but the calendar: book `window` on `resource_id` (locked first)."""

    system: SystemFacts
    window: Window
    resource_id: int
    resource_name: str
    heartbeat: timedelta | None
    warn_at: datetime | None


@dataclass(frozen=True)
class LatestBooking:
    """The latest booking on the resource starting before the window's end: the only possible conflict."""

    id: int
    start: datetime
    end: datetime | None
    kind: str
    user: str | None = None
    ref: int | None = None  # the reservation (or schedule booking) behind it, for the 409


@dataclass(frozen=True)
class ReserveWrite:
    """The rows to write: a booking, a reservation on it, two activity entries."""

    booking: dict
    reservation: dict
    system: str
    user: str

    def activity(self, reservation_id: int, user_id: int, at: datetime) -> list[dict]:
        until = format_time(self.reservation["end_at"]) or "no limit"
        common = dict(at=at, user_id=user_id or None, user_name=self.user, action="reserved", old=None)
        return [dict(common, object_type="reservation", object_id=str(reservation_id), field="system",
                     new=self.system),
                dict(common, object_type="system", object_id=self.system, field="reservation",
                     new=f"{reservation_id} until {until}")]

    def made(self, reservation_id: int) -> Made:
        r = self.reservation
        return Made(reservation_id, self.system, self.user, r["kind"], r["start_at"], r["end_at"], r["created_at"],
                    r["return_loan"], r["heartbeat_seconds"], r["last_heartbeat_at"], r["due_at"],
                    request_id=r["request_id"], advance_reservation=r["ar_id"], purpose=r["purpose"])


def retried(previous: Made, asked: Asked) -> Retry | Refusal:
    """The same request again gets what the first made; a different one with the same id is refused."""
    made = retries.ReserveMade(
        previous.system, previous.created_at, previous.start, previous.end, previous.return_loan,
        timedelta(seconds=previous.heartbeat_seconds) if previous.heartbeat_seconds else None,
        previous.advance_reservation, previous.returned_at is not None)
    try:
        retries.refuse_changed_retry(previous.request_id, f"reservation {previous.id}",
                                     retries.reserve_differences(asked.what, made))
    except DomainError as refusal:
        return refusal
    return Retry(previous)


def plan(facts: ReserveFacts, asked: Asked, policy: rules.ReservationPolicy, now: datetime,
         warn: tuple[timedelta, timedelta] | None = None) -> Planned | Retry | Refusal:
    """Who may reserve, for which window, on which calendar. `warn`: the site's (lead, short lead)."""
    if facts.previous is not None:
        return retried(facts.previous, asked)
    try:
        return _plan(facts, asked.what, policy, now, warn)
    except DomainError as refusal:  # the window rules (domain/reservations.py) raise theirs
        return refusal


def _plan(facts: ReserveFacts, what: retries.ReserveAsked, policy, now, warn) -> Planned | Refusal:
    actor, system, ar_id = facts.actor, facts.system, what.advance_reservation
    if system is None or not decide(actor, Permission.VIEW, system.access(with_loan=False)):
        return NotFound(f"no system named {what.system}")  # also when invisible: no leak of names
    if system.guest:
        return not_for_people(system.fqdn, "reserved")
    if ar_id is None:  # inside an AR, its ACL grants the use instead
        decision = decide(actor, Permission.RESERVE, system.access())
        if not decision:
            return Forbidden(f"{system.fqdn}: {decision.reason}")
    loan_end = system.loan_end if system.loan_recipient_id == actor.id else None
    end = what.end
    if ar_id is not None and end is None and what.duration is None and facts.advance is not None:
        end = facts.advance.end  # until the AR's end, not the site's default
    window = rules.plan_window(now, policy, what.start, end, what.duration, loan_end=loan_end)
    heartbeat = rules.heartbeat_interval(what.heartbeat) if what.heartbeat is not None else None
    resource = (system.resource_id, system.resource_name)
    if ar_id is not None:
        resource = _advance_slot(facts, ar_id, window)
        if isinstance(resource, DomainError):
            return resource
    warning = warn_at(window.start, window.end, *warn) if warn is not None else None
    return Planned(system, window, *resource, heartbeat, warning)


def _advance_slot(facts: ReserveFacts, ar_id: int, window: Window) -> tuple[int, str] | Refusal:
    """The AR's own calendar for the system, where an ACL user's reservation books."""
    ar, actor, system = facts.advance, facts.actor, facts.system
    if ar is None or ar.state in FINAL:
        return Invalid("advance_reservation", f"no active advance reservation {ar_id}")
    if not (actor.is_admin or ar.owner_id == actor.id or in_acl(actor.name, facts.group_names, ar.acl)):
        return Forbidden(f"you are not in the ACL of advance reservation {ar_id}")
    if ar.slot_resource_id is None:
        return Invalid("system", f"advance reservation {ar_id} does not hold {system.fqdn}")
    if ar.state == "E" and ar.error_handling == "hard":
        return Conflict(f"advance reservation {ar_id} is in error with hard error handling: nothing runs in it")
    if window.start < ar.start or window.end is None or window.end > ar.end:
        return Invalid("end", f"a reservation inside advance reservation {ar_id} must fit its window "
                              f"{format_time(ar.start)} .. {format_time(ar.end)}")
    return ar.slot_resource_id, ar.slot_name


def book(planned: Planned, facts: ReserveFacts, asked: Asked, now: datetime,
         latest: LatestBooking | None, raced: Made | None = None) -> ReserveWrite | Retry | Refusal:
    """Under the calendar's lock: a retry that raced its first attempt, the calendar, then the rows."""
    if raced is not None:
        return retried(raced, asked)
    window = planned.window
    if latest is not None and exclusive_conflict(Booking(latest.id, Window(latest.start, latest.end)), window):
        return BookingConflict(planned.resource_name, Holder(latest.start, latest.end, latest.user, latest.kind, latest.ref))
    actor, what = facts.actor, asked.what
    heartbeat = planned.heartbeat
    last_heartbeat = window.start if heartbeat else None
    booking = dict(resource_id=planned.resource_id, start_at=window.start, end_at=window.end, quantity=1,
                   exclusive=True, kind="reservation", user_id=actor.id, created_at=now)
    reservation = dict(
        system_id=planned.system.id, user_id=actor.id, kind="manual", start_at=window.start, end_at=window.end,
        return_loan=what.return_loan, heartbeat_seconds=int(heartbeat.total_seconds()) if heartbeat else None,
        last_heartbeat_at=last_heartbeat, due_at=rules.due_at(window.end, heartbeat, last_heartbeat),
        warn_at=planned.warn_at, request_id=asked.request_id, created_at=now, ar_id=what.advance_reservation,
        purpose=asked.purpose)
    return ReserveWrite(booking, reservation, planned.system.fqdn, actor.name)


def answer(made: Made, now: datetime) -> dict:
    """A reservation as the API shows it."""
    end = made.end
    return {
        "id": made.id,
        "system": made.system,
        "user": made.user,
        "kind": made.kind,
        "start": format_time(made.start),
        "end": format_time(end),
        "returned_at": format_time(made.returned_at),
        "state": rules.state(made.start, made.returned_at, made.return_reason, now),
        "return_loan": made.return_loan,
        "heartbeat": made.heartbeat_seconds,
        "last_heartbeat": format_time(made.last_heartbeat),
        "due": format_time(made.due),
        "seconds_left": max(0, int((end - now).total_seconds())) if end and made.returned_at is None else None,
        "request_id": made.request_id,
        "advance_reservation": made.advance_reservation,
        "purpose": made.purpose,
    }
