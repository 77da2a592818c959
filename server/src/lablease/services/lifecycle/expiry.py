"""Returning many due reservations at once: the worker's batch for reservations ending together.

Ten thousand reservations may end in the same second (a class's lab time, a
site-wide deadline). One at a time, each is a transaction of its own with a
dozen statements; here a chunk of them is one transaction: the chunk's rows
are read and locked in one query, the reservations and their bookings
updated with one statement each, the activity rows and the notices inserted
with one statement each, and the freed systems offered to the scheduler
(`system_freed`) before the chunk commits.

Only a **plain** return is batched: a reservation whose return does nothing
but free its slot, log it and tell its holder (endings.close_reservation
with no cascade). Anything else — a recipe's or an advance reservation's,
one that returns a loan with it, one granted through the waiting line (its
take_by), a booking not yet begun, a system with an
installation of the reservation, a netboot entry, a usage to reset or a
release action to run (installations.on_reservation_closed) — is left to the
one-by-one path, which does all of that. The worker (worker/loop.py
`run_step`) hands the rest of a chunk, or a whole chunk whose transaction
failed, to that path, so a poisoned row fails alone.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import exists, insert, or_, select, update

from ...domain.events import SystemFreed
from ...domain.returns import OPEN_INSTALLATION, WHY, expiry_reason, touches_system
from ...store.advance_tables import ArSystem
from ...store.provision_tables import Installation
from ...store.tables import Activity, Booking, Reservation, System, User
from ...store.waitline_tables import ReservationWait
from ..messages import notices
from ..provisioning.installations import at_end
from ..records import activity, due
from .reservations import EXPIRY


def return_plain(uow, ids: list[int], now: datetime) -> list[tuple[int, datetime]]:
    """Return the plain reservations among `ids` that are still due; (id, due time) of each returned, in the
    order of `ids`. The caller commits (one commit per chunk)."""
    session = uow.session
    rows = {row.id: row for row in session.execute(
        select(Reservation.id, Reservation.system_id, Reservation.user_id, Reservation.booking_id,
               Reservation.start_at, Reservation.end_at, Reservation.due_at)
        .join(Booking, Booking.id == Reservation.booking_id)
        .where(Reservation.id.in_(ids), *due.due_conditions(EXPIRY, now), Reservation.kind == "manual",
               Reservation.ar_id.is_(None), Reservation.return_loan.is_(False), Reservation.start_at <= now,
               Booking.start_at < now,
               ~exists().where(Installation.reservation_id == Reservation.id,
                               Installation.status.in_(OPEN_INSTALLATION)),
               ~exists().where(ReservationWait.reservation_id == Reservation.id))  # take_by: one by one
        .with_for_update(skip_locked=True, of=Reservation))}
    systems = {s.id: s for s in session.execute(select(
        System.id, System.fqdn, System.condition, System.usage, System.netboot, System.power, System.release_action,
        System.reprovision_distro_tree_id)
        .where(System.id.in_({row.system_id for row in rows.values()})))}
    plain = [rows[i] for i in ids if i in rows and _quiet(systems[rows[i].system_id])]
    if not plain:
        return []
    reasons = {row.id: expiry_reason(row.end_at, row.due_at) for row in plain}
    write = session.connection().execute  # Core statements: no ORM objects are built or flushed
    for reason in set(reasons.values()):
        chosen = [row.id for row in plain if reasons[row.id] == reason]
        write(update(Reservation).where(Reservation.id.in_(chosen)).values(
            returned_at=now, return_reason=reason, due_at=None, warn_at=None))
    cut = [row.id for row in plain if row.end_at is None or row.end_at > now]  # a heartbeat missed before the end
    if cut:
        write(update(Reservation).where(Reservation.id.in_(cut)).values(end_at=now))
    write(update(Booking).where(Booking.id.in_([row.booking_id for row in plain]),
                                or_(Booking.end_at.is_(None), Booking.end_at > now)).values(end_at=now))
    entries = []
    for row in plain:
        fqdn, reason = systems[row.system_id].fqdn, reasons[row.id]
        entries.append(activity.row(None, now, "reservation", row.id, reason, "state", "active", reason))
        entries.append(activity.row(None, now, "system", fqdn, reason, "reservation", row.id, None))
    write(insert(Activity), entries)
    users = {u.id: u for u in session.execute(select(User).where(
        User.id.in_({row.user_id for row in plain}))).unique().scalars()}
    notices.queue_many(uow, [
        notices.returned_notice(row.id, systems[row.system_id].fqdn, users[row.user_id], WHY[reasons[row.id]])
        for row in plain], now)
    _offer(uow, [systems[row.system_id] for row in plain], now)
    return [(row.id, row.due_at) for row in plain]


def _offer(uow, freed: list, now: datetime) -> None:
    """`system_freed` for each freed system someone may want: an Automated or Manual one (the scheduler's
    recipes, people waiting in line: services/queue/waitline.py) or one an advance reservation holds (its bound
    work's). The handlers ignore any other system, so not emitting those saves a few queries per return."""
    in_ars = set(uow.session.execute(select(ArSystem.system_id).where(
        ArSystem.system_id.in_([system.id for system in freed]))).scalars())
    wanted = [system for system in freed if system.condition in ("automated", "manual") or system.id in in_ars]
    for system in wanted:
        uow.emit(SystemFreed(system.id, now))


def _quiet(system) -> bool:
    """Nothing to do to the system when its reservation ends (no installation of it: the query saw to that)."""
    return not touches_system(at_end(system), False)
