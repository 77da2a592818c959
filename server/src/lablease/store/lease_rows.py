"""A held reservation read in one statement, and a decided change written with SQLAlchemy Core.

The hot paths of extend, heartbeat and return (services/lifecycle/lease.py) build no ORM
objects: `read` returns a plain `domain.lease.Lease`, `write` runs UPDATEs and
one multi-row activity INSERT. The statements are built once, at import.
"""
from __future__ import annotations

from sqlalchemy import JSON, bindparam, delete, exists, func, insert, select, type_coerce, update

from ..domain.lease import Change, Lease
from ..domain.returns import OPEN_INSTALLATION, SystemAtEnd, touches_system
from .provision_tables import Installation
from .tables import Activity, Booking, Loan, Reservation, Resource, System, User
from .waitline_tables import ReservationWait

_r, _s, _u, _b = Reservation.__table__, System.__table__, User.__table__, Booking.__table__
_next = Booking.__table__.alias("next_booking")
_loan = Loan.__table__
_install = Installation.__table__

_COLUMNS = (_r.c.id, _r.c.user_id, _u.c.name, _r.c.system_id, _s.c.fqdn, _s.c.owner_id, _r.c.kind, _r.c.start_at,
            _r.c.end_at, _r.c.returned_at, _r.c.return_reason, _r.c.return_loan, _r.c.heartbeat_seconds,
            _r.c.last_heartbeat_at, _r.c.due_at, _r.c.request_id, _r.c.ar_id, _r.c.booking_id, _b.c.start_at,
            _b.c.end_at)
_FROM = _r.join(_s, _s.c.id == _r.c.system_id).join(_u, _u.c.id == _r.c.user_id).outerjoin(
    _b, _b.c.id == _r.c.booking_id)

# The first other booking of the system starting at or after ours: the only one an extension can run into.
_NEXT_START = select(func.min(_next.c.start_at)).where(
    _next.c.resource_id == _s.c.resource_id, _next.c.start_at >= _b.c.start_at,
    _next.c.id != _r.c.booking_id).scalar_subquery()
_LOAN_END = select(_loan.c.end_at).where(
    _loan.c.system_id == _r.c.system_id, _loan.c.recipient_id == _r.c.user_id,
    _loan.c.returned_at.is_(None)).limit(1).scalar_subquery()
# What a return's touching the system depends on (domain/returns.touches_system decides). The settings are
# read as plain JSON: the driver's name and the MAC are never sealed.
_AT_END = (_s.c.usage, _s.c.condition, _s.c.release_action, type_coerce(_s.c.power, JSON)["driver"].as_string(),
           type_coerce(_s.c.netboot, JSON)["mac"].as_string(), _s.c.reprovision_distro_tree_id,
           exists().where(_install.c.reservation_id == _r.c.id, _install.c.status.in_(OPEN_INSTALLATION)))

# Read last by every statement: the purpose (for the answer) and whether it came through the waiting line.
_TAIL = (_r.c.purpose, exists().where(ReservationWait.__table__.c.reservation_id == _r.c.id))

_ID = bindparam("id")
# PostgreSQL locks the reservation (and for an extension the system's calendar resource, as a reserve
# does) until commit; SQLite renders no FOR UPDATE: the caller holds the database's write lock.
EXTEND = (select(*_COLUMNS, _NEXT_START, _LOAN_END, *_TAIL)
          .select_from(_FROM.join(Resource.__table__, Resource.__table__.c.id == _s.c.resource_id))
          .where(_r.c.id == _ID).with_for_update(of=(_r, Resource.__table__)))
HEARTBEAT = select(*_COLUMNS, *_TAIL).select_from(_FROM).where(_r.c.id == _ID).with_for_update(of=_r)
# A heartbeat reads without a lock and writes with beat_if_unchanged (below).
HEARTBEAT_PEEK = select(*_COLUMNS, *_TAIL).select_from(_FROM).where(_r.c.id == _ID)
RETURN = select(*_COLUMNS, *_AT_END, *_TAIL).select_from(_FROM).where(_r.c.id == _ID).with_for_update(of=_r)


def read(session, statement, reservation_id: int) -> Lease | None:
    """The reservation as `statement` (EXTEND, HEARTBEAT or RETURN) reads it, or None."""
    # Core statements run on the session's connection: the ORM's execution layer has nothing to add here
    row = session.connection().execute(statement, {"id": reservation_id}).first()
    if row is None:
        return None
    lease, tail = list(row[:20]), {"purpose": row[-2], "waited": bool(row[-1])}
    if statement is EXTEND:
        return Lease(*lease, next_start=row[20], loan_end=row[21], **tail)
    if statement is RETURN:
        usage, condition, action, driver, mac, tree, installing = row[20:27]
        system = SystemAtEnd(usage, condition, action, bool(driver), bool(mac), tree is not None)
        return Lease(*lease, system_busy=touches_system(system, bool(installing)), **tail)
    return Lease(*lease, **tail)


_UPDATES: dict[tuple, object] = {}  # the reservation's UPDATE per set of columns (a handful): built once
_ROW = bindparam("row")  # an UPDATE's own parameters may not share its columns' names
_DELETE_BOOKING = delete(_b).where(_b.c.id == _ROW)
_END_BOOKING = update(_b).where(_b.c.id == _ROW).values(end_at=bindparam("v_end_at"))
_INSERT_ACTIVITY = insert(Activity.__table__)


def _update_reservation(columns: tuple):
    statement = _UPDATES.get(columns)
    if statement is None:
        statement = update(_r).where(_r.c.id == _ROW).values({c: bindparam(f"v_{c}") for c in columns})
        _UPDATES[columns] = statement
    return statement


def write(session, lease: Lease, change: Change, activity: list[dict]) -> None:
    """The decided change: the reservation, its booking, the activity rows (one INSERT)."""
    values = change.reservation
    conn = session.connection()
    conn.execute(_update_reservation(tuple(values)), {"row": lease.id, **{f"v_{c}": v for c, v in values.items()}})
    if change.booking_end == ("delete",):
        conn.execute(_DELETE_BOOKING, {"row": lease.booking_id})
    elif change.booking_end is not None:
        conn.execute(_END_BOOKING, {"row": lease.booking_id, "v_end_at": change.booking_end[1]})
    if activity:
        conn.execute(_INSERT_ACTIVITY, activity)


# The heartbeat's one write: it holds only while what the decision read is still so (not returned, the same
# interval, start and end), so no lock need be held from the read; a miss sends the caller to the locked path.
_BEAT = (update(_r).where(_r.c.id == _ROW, _r.c.returned_at.is_(None),
                          _r.c.heartbeat_seconds == bindparam("seen_heartbeat"),
                          _r.c.start_at == bindparam("seen_start"),
                          _r.c.end_at.is_not_distinct_from(bindparam("seen_end")))
         .values(last_heartbeat_at=bindparam("v_last_heartbeat_at"), due_at=bindparam("v_due_at")))


def beat_if_unchanged(session, lease: Lease, change: Change) -> bool:
    """Write a decided heartbeat if the reservation is as `lease` read it; False (nothing written) if not."""
    values = change.reservation
    written = session.connection().execute(_BEAT, {
        "row": lease.id, "seen_heartbeat": lease.heartbeat_seconds, "seen_start": lease.start_at,
        "seen_end": lease.end_at, "v_last_heartbeat_at": values["last_heartbeat_at"], "v_due_at": values["due_at"]})
    return written.rowcount == 1


def system_resource(session, system_id: int) -> Resource:
    """The system's calendar resource (for naming who is in the way of a refused extension)."""
    return session.execute(select(Resource).join(System, System.resource_id == Resource.id)
                           .where(System.id == system_id)).scalar_one()
