"""The rows a reserve reads and writes, in SQLAlchemy Core (no ORM objects on the hot path).

Each function is one statement (or one round trip) on a Connection of the
unit of work's session; domain/reserve.py decides between the reads and the
writes.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import String, and_, bindparam, cast, exists, insert, select, union_all
from sqlalchemy.dialects.postgresql import insert as pg_insert

from ..domain.permissions import Permission, Rule
from ..domain.reserve import AdvanceFacts, LatestBooking, Made, ReserveWrite, SystemFacts
from .advance_tables import AdvanceReservation, ArSystem
from .tables import (AccessRule, Activity, Booking, Group, Loan, Pool, PoolAccessRule, PoolSystem, Reservation,
                     Resource, ScheduleReservation, System, User)
from .types import UTCDateTime
from .waitline_tables import ReservationWait

bookings, reservations, activity = Booking.__table__, Reservation.__table__, Activity.__table__
systems, loans, users = System.__table__, Loan.__table__, User.__table__


def _rules_of_system():
    """(system id, permission, user, group) of the system named :fqdn: its own rules, or its policy pool's.

    Each branch finds the system by its unique name itself, so no database has to push the outer
    query's condition into the UNION: it reads that system's rules only, however many systems there are."""
    named = System.fqdn == bindparam("fqdn")
    own = (select(AccessRule.system_id.label("system_id"), AccessRule.permission, AccessRule.user_id,
                  AccessRule.group_id)
           .join(System, System.id == AccessRule.system_id).where(named, System.policy_pool_id.is_(None)))
    pooled = (select(System.id.label("system_id"), PoolAccessRule.permission, PoolAccessRule.user_id,
                     PoolAccessRule.group_id)
              .join(PoolAccessRule, PoolAccessRule.pool_id == System.policy_pool_id).where(named))
    return union_all(own, pooled).subquery("rules")


def _system_query():
    rules = _rules_of_system()
    loan = (select(Loan.system_id, Loan.recipient_id, Loan.end_at).where(Loan.returned_at.is_(None))
            .subquery("loan"))
    # In a pool that keeps a floor of idle Automated systems (services/booking/holds.py checks it, rarely needed).
    floored = exists().where(PoolSystem.system_id == System.id, Pool.id == PoolSystem.pool_id,
                             Pool.automation_floor > 0)
    return (select(System.id, System.fqdn, System.resource_id, Resource.name.label("resource_name"), System.condition,
                   System.owner_id, System.guest, loan.c.recipient_id, loan.c.end_at, rules.c.permission,
                   rules.c.user_id, rules.c.group_id, floored.label("floored"))
            .join(Resource, Resource.id == System.resource_id)
            .outerjoin(loan, loan.c.system_id == System.id)
            .outerjoin(rules, rules.c.system_id == System.id)
            .where(System.fqdn == bindparam("fqdn")))


def system_facts(conn, fqdn: str) -> SystemFacts | None:
    """The system with its rules and active loan: one row per rule (one statement)."""
    rows = conn.execute(_SYSTEM, {"fqdn": str(fqdn).lower()}).all()
    if not rows:
        return None
    first = rows[0]
    rules = tuple(Rule(Permission(r.permission), r.user_id, r.group_id) for r in rows if r.permission is not None)
    return SystemFacts(first.id, first.fqdn, first.resource_id, first.resource_name, first.condition, first.owner_id,
                       bool(first.guest), rules, first.recipient_id, first.end_at, bool(first.floored))


def _made_query():
    return (select(Reservation.id, System.fqdn, User.name, Reservation.kind, Reservation.start_at, Reservation.end_at,
                   Reservation.created_at, Reservation.return_loan, Reservation.heartbeat_seconds,
                   Reservation.last_heartbeat_at, Reservation.due_at, Reservation.returned_at,
                   Reservation.return_reason, Reservation.request_id, Reservation.ar_id, Reservation.purpose)
            .join(System, System.id == Reservation.system_id).join(User, User.id == Reservation.user_id))


def previous(conn, user_id: int, request_id: str | None) -> Made | None:
    """The caller's reservation made with this request_id, if any."""
    if not request_id:
        return None
    row = conn.execute(_PREVIOUS, {"user_id": user_id, "request_id": request_id}).first()
    return Made(*row) if row is not None else None


def waited(conn, user_id: int, request_id: str | None) -> int | None:
    """The id of the caller's reservation made through the waiting line with this request_id, if any."""
    if not request_id:
        return None
    return conn.execute(select(Reservation.id).join(ReservationWait, ReservationWait.reservation_id == Reservation.id)
                        .where(Reservation.user_id == user_id, Reservation.request_id == request_id)).scalar()


def advance_facts(conn, ar_id: int, system_id: int, group_ids) -> tuple[AdvanceFacts | None, frozenset[str]]:
    """The AR with its slot for the system, and the actor's group names (its ACL names @groups)."""
    row = conn.execute(
        select(AdvanceReservation.id, AdvanceReservation.owner_id, AdvanceReservation.state,
               AdvanceReservation.error_handling, AdvanceReservation.start_at, AdvanceReservation.end_at,
               AdvanceReservation.acl, ArSystem.slot_resource_id, Resource.name)
        .outerjoin(ArSystem, and_(ArSystem.ar_id == AdvanceReservation.id, ArSystem.system_id == system_id))
        .outerjoin(Resource, Resource.id == ArSystem.slot_resource_id)
        .where(AdvanceReservation.id == ar_id)).first()
    if row is None:
        return None, frozenset()
    names = frozenset(conn.execute(select(Group.name).where(Group.id.in_(list(group_ids)))).scalars()) \
        if group_ids else frozenset()
    return AdvanceFacts(row.id, row.owner_id, row.state, row.error_handling, row.start_at, row.end_at,
                        tuple(row.acl or ()), row.slot_resource_id, row.name), names


def lock_resource(conn, resource_id: int) -> None:
    """PostgreSQL: hold the resource's row until commit, so decisions on its calendar are serialised
    (SQLite needs no statement: BEGIN IMMEDIATE holds the whole database)."""
    conn.execute(_LOCK, {"resource_id": resource_id})


def latest_before(conn, resource_id: int, end: datetime | None) -> LatestBooking | None:
    """The latest booking on the resource starting before `end` (one index probe), with its holder's name."""
    if end is None:
        row = conn.execute(_LATEST_ANY, {"resource_id": resource_id}).first()
    else:
        row = conn.execute(_LATEST, {"resource_id": resource_id, "end": end}).first()
    return LatestBooking(row.id, row.start_at, row.end_at, row.kind, row.name) if row is not None else None


def holder_ref(conn, booking: LatestBooking) -> int:
    """What a client can look up about a conflicting booking: its reservation or schedule booking, else itself.

    Read only for a refusal (reservations.booking_id has no index, and a granted reserve never needs it)."""
    if booking.kind in ("reservation", "recipe"):
        found = conn.execute(select(Reservation.id).where(Reservation.booking_id == booking.id)).scalar()
    elif booking.kind == "schedule":
        found = conn.execute(select(ScheduleReservation.id).where(
            ScheduleReservation.booking_id == booking.id)).scalar()
    else:
        found = None
    return found or booking.id


def write(conn, rows: ReserveWrite, user_id: int, now: datetime, postgresql: bool) -> int | None:
    """Insert the booking, the reservation and its activity; the reservation's id, or None when PostgreSQL's
    exclusion constraint refused the booking (a check missed: the caller names the holder)."""
    if postgresql:
        return _write_postgresql(conn, rows, user_id, now)
    booking_id = conn.execute(_INSERT_BOOKING, rows.booking).scalar_one()
    reservation_id = conn.execute(_INSERT_RESERVATION, dict(rows.reservation, booking_id=booking_id)).scalar_one()
    conn.execute(_INSERT_ACTIVITY, rows.activity(reservation_id, user_id, now))
    return reservation_id


def _write_postgresql(conn, rows: ReserveWrite, user_id: int, now: datetime) -> int | None:
    """One round trip: booking, reservation on it and activity as data-modifying CTEs (nothing when the
    exclusion constraint turns the booking down: ON CONFLICT DO NOTHING, then no row to build on)."""
    params = {f"b_{name}": value for name, value in rows.booking.items()}
    params.update({f"r_{name}": value for name, value in rows.reservation.items()})
    for index, entry in enumerate(rows.activity(0, user_id, now)):  # 0: the id, known only in SQL
        params.update({f"a{index}_{name}": value for name, value in entry.items()})
    params["a1_new"] = params["a1_new"][1:]  # "0 until ...": SQL puts the id before the rest
    return conn.execute(_WRITE_POSTGRESQL, params).scalar_one_or_none()


def _param(table, prefix: str, name: str):
    """A named value for a column, cast to its type (PostgreSQL types a bare NULL or text in a SELECT as text)."""
    column = table.c[name]
    return cast(bindparam(f"{prefix}_{name}", type_=column.type), column.type)


_BOOKING_COLUMNS = ("resource_id", "start_at", "end_at", "quantity", "exclusive", "kind", "user_id", "created_at")
_RESERVATION_COLUMNS = ("system_id", "user_id", "kind", "start_at", "end_at", "return_loan", "heartbeat_seconds",
                        "last_heartbeat_at", "due_at", "warn_at", "request_id", "created_at", "ar_id", "purpose")
_ACTIVITY_COLUMNS = ("at", "user_id", "user_name", "object_type", "object_id", "action", "field", "old", "new")


def _postgresql_write():
    """The statement of _write_postgresql, built once (ReserveWrite's rows are its parameters)."""
    booked = (pg_insert(bookings).values({name: bindparam(f"b_{name}", type_=bookings.c[name].type)
                                          for name in _BOOKING_COLUMNS})
              .on_conflict_do_nothing().returning(bookings.c.id).cte("booked"))
    made = (insert(reservations)
            .from_select([*_RESERVATION_COLUMNS, "booking_id"],
                         select(*[_param(reservations, "r", name) for name in _RESERVATION_COLUMNS], booked.c.id))
            .returning(reservations.c.id).cte("made"))
    made_id = cast(made.c.id, String)
    entries = [[_param(activity, f"a{index}", name) for name in _ACTIVITY_COLUMNS] for index in (0, 1)]
    entries[0][_ACTIVITY_COLUMNS.index("object_id")] = made_id  # the reservation's entry is about it
    entries[1][_ACTIVITY_COLUMNS.index("new")] = made_id + _param(activity, "a1", "new")  # "<id> until ..."
    logged = insert(activity).from_select(list(_ACTIVITY_COLUMNS), union_all(
        *[select(*values).select_from(made) for values in entries])).cte("logged")
    return select(made.c.id).add_cte(logged)


# Built once: SQLAlchemy caches each statement's compiled form, so a request pays no compilation.
_SYSTEM = _system_query()
_PREVIOUS = _made_query().where(Reservation.user_id == bindparam("user_id"),
                                Reservation.request_id == bindparam("request_id"))
_LATEST_ANY = (select(Booking.id, Booking.start_at, Booking.end_at, Booking.kind, User.name)
               .outerjoin(User, User.id == Booking.user_id)
               .where(Booking.resource_id == bindparam("resource_id"))
               .order_by(Booking.start_at.desc()).limit(1))
_WRITE_POSTGRESQL = _postgresql_write()
_INSERT_BOOKING = insert(bookings).returning(bookings.c.id)
_INSERT_RESERVATION = insert(reservations).returning(reservations.c.id)
_INSERT_ACTIVITY = insert(activity)
_LOCK = select(Resource.id).where(Resource.id == bindparam("resource_id")).with_for_update()
_LATEST = _LATEST_ANY.where(Booking.start_at < bindparam("end", type_=UTCDateTime()))
