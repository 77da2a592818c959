"""What a timeline shows: per system, its bookings and loans touching a window (domain/timeline.py lays it out).

Bookings of a system's own calendar are reservations, recipe runs and advance reservations;
work inside an advance reservation books the AR's calendar, so it shows as the AR's bar.
Loans are not bookings (a loan allows reservations): they come from the loans table.
Every system shown is one the actor may view, as in the API's listings.
"""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from urllib.parse import quote

from sqlalchemy import or_, select

from ...domain import timeline as rules
from ...domain.times import format_time
from ...store.advance_tables import ArSystem
from ...store.tables import Booking, Loan, PoolSystem, Recipe, Reservation, System
from ..catalog import pools as pool_service
from ..catalog import systems as system_service
from . import overview

PER_PAGE = 50  # systems per page of a pool's timeline


def _touching(column_start, column_end, start: datetime, end: datetime):
    return [column_start < end, or_(column_end.is_(None), column_end > start)]


def spans(uow, systems: list[System], start: datetime, end: datetime) -> dict[int, list[rules.Span]]:
    """Per system id, its bookings and loans touching [start, end), each with a label and a link."""
    session = uow.session
    by_resource = {s.resource_id: s for s in systems}
    found: dict[int, list[rules.Span]] = defaultdict(list)
    rows = session.execute(
        select(Booking, Reservation.id, Reservation.kind, Recipe.id, Recipe.job_id, ArSystem.ar_id)
        .outerjoin(Reservation, Reservation.booking_id == Booking.id)
        .outerjoin(Recipe, Recipe.reservation_id == Reservation.id)
        .outerjoin(ArSystem, ArSystem.booking_id == Booking.id)
        .where(Booking.resource_id.in_(by_resource), Booking.kind.in_(("reservation", "recipe", "ar")),
               *_touching(Booking.start_at, Booking.end_at, start, end)))
    for booking, reservation_id, reservation_kind, recipe_id, job_id, ar_id in rows:
        system = by_resource[booking.resource_id]
        found[system.id].append(_span(booking, reservation_id, recipe_id, job_id, ar_id))
    loans = session.execute(select(Loan).where(Loan.system_id.in_([s.id for s in systems]),
                                               *_touching(Loan.start_at, Loan.returned_at, start, end),
                                               or_(Loan.end_at.is_(None), Loan.end_at > start)))
    fqdns = {s.id: s.fqdn for s in systems}
    for loan in loans.scalars():
        until = min(filter(None, (loan.end_at, loan.returned_at)), default=None)
        found[loan.system_id].append(rules.Span("loan", loan.start_at, until, f"lent to {loan.recipient.name}",
                                                "/systems/" + quote(fqdns[loan.system_id])))
    return found


def _span(booking: Booking, reservation_id, recipe_id, job_id, ar_id) -> rules.Span:
    if booking.kind == "ar":
        return rules.Span("ar", booking.start_at, booking.end_at, f"advance reservation {ar_id}",
                          f"/advance-reservations/{ar_id}" if ar_id else None)
    if recipe_id is not None and booking.kind == "recipe":
        return rules.Span("recipe", booking.start_at, booking.end_at, f"recipe {recipe_id} of job {job_id}",
                          f"/jobs/{job_id}")
    return rules.Span("reservation", booking.start_at, booking.end_at, f"reservation {reservation_id}",
                      "/reservations" if reservation_id else None)


def chart(uow, systems: list[System], start: datetime, end: datetime, now: datetime) -> rules.Chart:
    found = spans(uow, systems, start, end)
    return rules.layout([(s.fqdn, "/systems/" + quote(s.fqdn), found.get(s.id, [])) for s in systems],
                        start, end, now)


def for_system(uow, actor, now: datetime, fqdn: str, start: datetime, end: datetime) -> rules.Chart:
    system = system_service.find(uow, fqdn, actor)
    return chart(uow, [system], start, end, now)


def for_pool(uow, actor, now: datetime, name: str, start: datetime, end: datetime, page: int) -> dict:
    """One page of a pool's timeline: its systems the actor may view, by name (visibility decided per kind of
    system and the page sliced in SQL, as the systems list does: a pool of 10,000 systems builds ORM objects
    only for the page shown)."""
    about = pool_service.summary(uow, name)
    # not systems.filtered: loading the Pool object would load its every system (Pool.systems is eager)
    members = select(System).where(System.id.in_(select(PoolSystem.system_id).where(PoolSystem.pool_id == about["id"])))
    shown_to_actor, seen = overview.visible(uow, actor, members)
    total = sum(kind.count for kind in seen)
    rows, page, pages = overview.page_of(uow, shown_to_actor, total, page, PER_PAGE)
    by_id = {s.id: s for s in uow.session.execute(select(System).where(System.id.in_([row.id for row in rows])))
             .unique().scalars()}
    shown = [by_id[row.id] for row in rows]
    return {"pool": about | {"systems": total}, "page": page, "pages": pages,
            "chart": chart(uow, shown, start, end, now)}


def as_dict(chart: rules.Chart) -> dict:
    """The chart's data without its geometry: what GET /api/v1/.../timeline answers."""
    return {"start": format_time(chart.start), "end": format_time(chart.end),
            "systems": [{"system": row.name, "bookings": [
                {"kind": b.kind, "what": b.label, "start": b.start, "end": b.end, "link": b.href} for b in row.bars]}
                for row in chart.rows]}
