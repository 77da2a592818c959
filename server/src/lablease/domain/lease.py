"""Changing a held reservation: extend (or shorten), heartbeat, return — the decisions, as data.

Each `decide_*` takes what was read (a `Lease`: the reservation, its booking,
the next booking after it, the holder's loan end) and returns the `Change` to
write, or raises the refusal (`Invalid`, `Conflict`) or returns `Blocked` when
the next booking is in the way (the caller names its holder). No I/O, no clock.

Only a plain manual reservation takes this path whole; `needs_cascade` says
when returning one has follow-ups (a recipe's or an advance reservation's
reservation, return_loan, a notice to a holder someone else returned it for,
a system to power off or clean) that the caller hands to the full cascade.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from . import reservations as rules
from .errors import Invalid, ReservationEnded
from .notices import warn_at
from .permissions import Actor, SystemAccess, may_manage_reservation
from .times import format_time
from .windows import Window


@dataclass(frozen=True)
class Lease:
    """A reservation as read for a change, with what the decision needs around it."""

    id: int
    user_id: int
    holder: str  # the holder's user name
    system_id: int
    fqdn: str
    owner_id: int | None
    kind: str
    start_at: datetime
    end_at: datetime | None
    returned_at: datetime | None
    return_reason: str | None
    return_loan: bool
    heartbeat_seconds: int | None
    last_heartbeat_at: datetime | None
    due_at: datetime | None
    request_id: str | None
    ar_id: int | None
    booking_id: int | None = None
    booking_start: datetime | None = None
    booking_end: datetime | None = None
    next_start: datetime | None = None  # the first other booking of the system starting at or after ours
    loan_end: datetime | None = None  # the end of the holder's loan of the system (None: no loan, or no end)
    system_busy: bool = False  # its end touches the system (domain/returns.touches_system)
    purpose: str | None = None  # what the holder said it is for (shown in the answer)
    waited: bool = False  # it came through the waiting line: its grant's take_by and wait state take the full path


@dataclass(frozen=True)
class WarnLeads:
    """The site's warning lead times (settings warn_before, warn_before_short)."""

    lead: timedelta
    short: timedelta


@dataclass
class Change:
    """What to write: the reservation's new column values, its booking's fate, activity rows (as
    (object_type, object_id, action, field, old, new)), and whether the system was freed."""

    reservation: dict
    booking_end: tuple | None = None  # ("end", datetime) or ("delete",)
    activity: list[tuple] = field(default_factory=list)
    freed: bool = False


@dataclass(frozen=True)
class Blocked:
    """The refusal of an extension: another booking starts before the new end."""

    new_end: datetime | None


def wakes_worker(lease: Lease, change: Change) -> bool:
    """Whether the worker's next due time may come sooner, so it must be woken: not for a heartbeat, which only
    moves the deadline later (hundreds of CI jobs beating each woke the worker for nothing); for any other change,
    whose effect on the warnings and deadlines is not read here, yes."""
    if set(change.reservation) - {"last_heartbeat_at", "due_at"}:
        return True
    new = change.reservation.get("due_at")
    return new is not None and (lease.due_at is None or new < lease.due_at)


def is_plain(lease: Lease) -> bool:
    """A manual reservation outside any advance reservation: the whole change is decided here."""
    return lease.kind == "manual" and lease.ar_id is None and lease.booking_id is not None and not lease.waited


def needs_cascade(lease: Lease, actor: Actor | None) -> bool:
    """Returning it has follow-ups beyond its own rows and freeing the system (see the module's doc)."""
    return (not is_plain(lease) or lease.return_loan or lease.system_busy
            or actor is None or actor.id != lease.user_id)


def refuse_returned(reservation_id: int, returned_at: datetime | None, reason: str | None = None) -> None:
    """A returned reservation is gone for good (its own problem type: a client tells it from "taken")."""
    if returned_at is not None:
        why = f" ({reason.replace('_', ' ')})" if reason else ""
        raise ReservationEnded(f"reservation {reservation_id} was already returned at {format_time(returned_at)}{why}",
                               returned_at=format_time(returned_at), return_reason=reason)


def may_manage(actor: Actor, lease: Lease) -> bool:
    """Its holder, the system's owner, admins (`permissions.may_manage_reservation`; the owner is all
    of the system's access it reads)."""
    return bool(may_manage_reservation(actor, lease.user_id, SystemAccess(lease.owner_id, "")))


def extends_here(lease: Lease) -> bool:
    """Its booking is on the system's own calendar (not an advance reservation's), so the next booking
    read with it is all an extension can run into."""
    return lease.ar_id is None and lease.booking_id is not None and not lease.waited


def _deadlines(lease: Lease, end: datetime | None, heartbeat_seconds: int | None, last: datetime | None,
               warn: WarnLeads | None) -> dict:
    interval = timedelta(seconds=heartbeat_seconds) if heartbeat_seconds else None
    return {"due_at": rules.due_at(end, interval, last),
            "warn_at": warn_at(lease.start_at, end, warn.lead, warn.short) if warn is not None else None}


def decide_extend(lease: Lease, now: datetime, policy: rules.ReservationPolicy, warn: WarnLeads | None,
                  end: datetime | None = None, extend_by: timedelta | None = None) -> Change | Blocked:
    """Move the end (later or earlier): never into the next booking, past the site's maximum or the loan."""
    refuse_returned(lease.id, lease.returned_at, lease.return_reason)
    new_end = rules.plan_new_end(now, policy, Window(lease.start_at, lease.end_at), end, extend_by,
                                 loan_end=lease.loan_end)
    # Bookings of one system never overlap, so only one starting between ours and the new end is in the way.
    if lease.next_start is not None and (new_end is None or lease.next_start < new_end):
        return Blocked(new_end)
    values = {"end_at": new_end, **_deadlines(lease, new_end, lease.heartbeat_seconds, lease.last_heartbeat_at, warn)}
    return Change(values, ("end", new_end), [("reservation", lease.id, "extended", "end", lease.end_at, new_end)])


def decide_heartbeat(lease: Lease, now: datetime) -> Change:
    """The holder is alive: the missed-heartbeat deadline counts from now (or the start, if later)."""
    refuse_returned(lease.id, lease.returned_at, lease.return_reason)
    if not lease.heartbeat_seconds:
        raise Invalid("heartbeat", f"reservation {lease.id} was made without a heartbeat interval")
    last = max(now, lease.start_at)
    interval = timedelta(seconds=lease.heartbeat_seconds)
    return Change({"last_heartbeat_at": last, "due_at": rules.due_at(lease.end_at, interval, last)})


def decide_set_heartbeat(lease: Lease, now: datetime, interval: timedelta | None) -> Change:
    """Start, change or (None) stop the heartbeat; the deadline counts from now."""
    refuse_returned(lease.id, lease.returned_at, lease.return_reason)
    seconds = int(rules.heartbeat_interval(interval).total_seconds()) if interval is not None else None
    last = max(now, lease.start_at) if seconds else None
    values = {"heartbeat_seconds": seconds, "last_heartbeat_at": last,
              "due_at": rules.due_at(lease.end_at, timedelta(seconds=seconds) if seconds else None, last)}
    return Change(values, activity=[("reservation", lease.id, "changed", "heartbeat", lease.heartbeat_seconds,
                                     seconds)])


def decide_return(lease: Lease, now: datetime, reason: str = "returned") -> Change:
    """End it now: the booking is cut at now (or dropped if it had not begun), the system is freed."""
    refuse_returned(lease.id, lease.returned_at, lease.return_reason)
    values = {"returned_at": now, "return_reason": reason, "due_at": None, "warn_at": None}
    if lease.end_at is None or lease.end_at > now:
        values["end_at"] = max(now, lease.start_at)
    booking = None
    if lease.booking_id is not None:
        if lease.booking_start >= now:
            values["booking_id"], booking = None, ("delete",)
        elif lease.booking_end is None or lease.booking_end > now:
            booking = ("end", now)
    return Change(values, booking, [("reservation", lease.id, reason, "state", "active", reason),
                                    ("system", lease.fqdn, reason, "reservation", lease.id, None)],
                  freed=lease.booking_id is not None)
