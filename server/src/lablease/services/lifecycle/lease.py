"""Extend, heartbeat and return a held reservation: read once, decide in domain/lease.py, write once.

Each use case takes the write lock (SQLite) where its one read begins — that
read is the check — and holds it to the commit; PostgreSQL locks the rows the
read returns. The read builds no ORM objects (store/lease_rows.py). What the
plain path does not cover goes to the full, ORM-based path:

- extending a reservation inside an advance reservation (its window and its
  calendar), or where the site caps each user's total hold: `reservations.extend`;
- a reservation that waits for a system or was granted through the waiting
  line (its take_by and wait state): `reservations.heartbeat`, `set_heartbeat`,
  `return_reservation`, `extend`;
- returning anything with follow-ups (see `domain.lease.needs_cascade`):
  `return_with_cascade`, the one entry to the cascade;
- a caller who may not manage the reservation: `reservations.managed`
  answers 404 or 403 exactly as for every other use of a reservation.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from ...domain import lease as decide
from ...domain import reservations as rules
from ...domain.events import SystemFreed
from ...domain.lease import Blocked, Change, Lease, WarnLeads
from ...domain.permissions import Actor
from ...store import calendar, lease_rows
from ..booking import endings
from ..records import activity
from . import reservations


def render(lease: Lease, change: Change, now: datetime) -> dict:
    """The reservation as the API shows it, after the change."""
    values = {**lease.__dict__, **change.reservation}
    return reservations.render(values, lease.fqdn, lease.holder, now)


def _read(uow, actor: Actor, statement, reservation_id: int) -> Lease | None:
    """The held reservation, or None when the plain path does not apply: no such reservation, or one
    still waiting for a system or granted through the waiting line (the full path answers those)."""
    uow.start_writing()  # SQLite: the write lock from this read (the check) to the commit
    lease = lease_rows.read(uow.session, statement, reservation_id)
    if lease is None or lease.waited:
        return None
    if not decide.may_manage(actor, lease):
        reservations.managed(uow, actor, reservation_id)  # raises: 404 unless visible, else 403
    return lease


def _write(uow, actor: Actor | None, now: datetime, lease: Lease, change: Change) -> dict:
    rows = [activity.row(actor, now, *entry) for entry in change.activity]
    lease_rows.write(uow.session, lease, change, rows)
    if change.freed:
        uow.emit(SystemFreed(lease.system_id, now))
    if decide.wakes_worker(lease, change):
        uow.wake_worker()
    return render(lease, change, now)


def _limits_holds(settings) -> bool:
    """The site caps each user's total hold (max_hold_per_user): a longer end is checked on the full path,
    which counts the user's other reservations."""
    return settings.max_hold_per_user is not None


def _warn_leads(settings) -> WarnLeads:
    return WarnLeads(settings.warn_before, settings.warn_before_short)


def extend(uow, actor: Actor, now: datetime, policy: rules.ReservationPolicy, reservation_id: int,
           end: datetime | None = None, extend_by: timedelta | None = None) -> dict:
    """Move the end (later or earlier); never into the next booking, never past the site's maximum."""
    lease = _read(uow, actor, lease_rows.EXTEND, reservation_id)
    if lease is None or not decide.extends_here(lease) or _limits_holds(uow.settings):
        return reservations.extend(uow, actor, now, policy, reservation_id, end, extend_by)
    change = decide.decide_extend(lease, now, policy, _warn_leads(uow.settings), end, extend_by)
    if isinstance(change, Blocked):
        raise _holder_in_the_way(uow, lease, change)
    endings.keep_recipe_end(uow, lease.id, lease.kind, lease.fqdn, lease.end_at, change.reservation["end_at"])
    return _write(uow, actor, now, lease, change)


def _holder_in_the_way(uow, lease: Lease, blocked: Blocked):
    """The refusal names the booking in the way, as a reserve's does (read only when refused)."""
    session = uow.session
    resource = lease_rows.system_resource(session, lease.system_id)
    candidate = calendar.latest_before(session, resource.id, blocked.new_end, exclude=lease.booking_id)
    return calendar.holder_of(session, candidate, resource.name)


def heartbeat(uow, actor: Actor, now: datetime, reservation_id: int) -> dict:
    """The holder is still alive: the missed-heartbeat deadline moves on.

    The most frequent write of all (every CI job, every few minutes): read without a lock, decided, and
    written by one UPDATE that holds only if nothing the decision read has changed meanwhile, so the
    write lock (SQLite) or the writing transaction (PostgreSQL) lasts one statement. A reservation changed
    in between, or one the plain path does not cover, goes the locked way below, which decides again."""
    peek = lease_rows.read(uow.session, lease_rows.HEARTBEAT_PEEK, reservation_id)
    if peek is not None and not peek.waited and decide.may_manage(actor, peek):
        change = decide.decide_heartbeat(peek, now)
        uow.start_writing()
        if lease_rows.beat_if_unchanged(uow.session, peek, change):
            return render(peek, change, now)
    lease = _read(uow, actor, lease_rows.HEARTBEAT, reservation_id)
    if lease is None:
        return reservations.heartbeat(uow, actor, now, reservation_id)
    return _write(uow, actor, now, lease, decide.decide_heartbeat(lease, now))


def set_heartbeat(uow, actor: Actor, now: datetime, reservation_id: int, interval: timedelta | None) -> dict:
    """Start, change or (None) stop the heartbeat of a reservation; the deadline counts from now."""
    lease = _read(uow, actor, lease_rows.HEARTBEAT, reservation_id)
    if lease is None:
        return reservations.set_heartbeat(uow, actor, now, reservation_id, interval)
    return _write(uow, actor, now, lease, decide.decide_set_heartbeat(lease, now, interval))


def give_back(uow, actor: Actor, now: datetime, reservation_id: int) -> dict:
    """Return it now; a reservation with follow-ups goes through the cascade."""
    lease = _read(uow, actor, lease_rows.RETURN, reservation_id)
    if lease is None:  # waiting (leaving the line) or granted through it, or no such reservation (404)
        return reservations.return_reservation(uow, actor, now, reservation_id)
    if decide.needs_cascade(lease, actor):
        return return_with_cascade(uow, actor, now, reservation_id)
    return _write(uow, actor, now, lease, decide.decide_return(lease, now))


def return_with_cascade(uow, actor: Actor, now: datetime, reservation_id: int, reason: str = "returned") -> dict:
    """The full return (services/booking/endings.py `close_reservation`): a recipe's installation, return_loan,
    notices, the system's release action, with ORM objects and events."""
    reservation = reservations.managed(uow, actor, reservation_id)
    decide.refuse_returned(reservation.id, reservation.returned_at, reservation.return_reason)
    endings.close_reservation(uow, reservation, now, reason, actor)
    return reservations.as_dict(uow, reservation, now)

