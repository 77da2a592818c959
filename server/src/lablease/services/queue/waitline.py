"""The waiting line for people: a reservation that waits in the scheduler's queue for a system.

`POST /reservations` with `wait` is queued by services/queue/wait_requests.py (services/booking/reserve.py keeps
the immediate path). The wait gets the scheduler's requirement class (scheduling.requirement_class, shared
with recipes that ask alike, its candidates the systems its owner may reserve), and the
scheduler offers each freed system to waits and recipe sets in one order (priority, then
age): scheduling.on_system_freed calls `try_grant`. Granting books the system from now for
the length asked, and tells the holder through the outbox.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import and_, func, or_, select

from ...domain import reservations as reservation_rules
from ...domain import waitline as rules
from ...domain.errors import BookingConflict
from ...domain.notices import warn_at
from ...domain.permissions import Actor, Permission, decide
from ...domain.times import format_time
from ...scheduler.filters import wanted_words
from ...scheduler.planner import queue_key
from ...store import calendar
from ...store.tables import Booking, ClassCandidate, Recipe, RequirementClass, Reservation, System
from ...store.waitline_tables import ReservationWait
from ..booking import holds
from ..catalog import health_state
from ..catalog import systems as system_service
from ..messages import notices
from ..people.users import actor_for
from ..records import activity

WAITING = "waiting"


# --- granting ------------------------------------------------------------------------------

def try_grant(uow, wait: ReservationWait, now: datetime, only: int | None = None) -> bool:
    """Give the waiting reservation the first of its candidates that is free now, that its owner may
    reserve now (a loan may have changed that), that passed a health check recently enough when it asked
    so (health_state.gate_wait: else a check is asked for on one of them), and whose taking keeps its pools'
    automation floors (holds.floor_allows, under the same lock as an immediate reserve); `only`: just that
    freed system."""
    session = uow.session
    reservation = wait.reservation
    holder = actor_for(uow, reservation.user)
    window = rules.grant_window(now, _length(wait))
    query = (select(System).join(ClassCandidate, ClassCandidate.system_id == System.id)
             .where(ClassCandidate.class_id == wait.class_id, System.condition.in_(("automated", "manual")),
                    ~calendar.booked_during(window, System.resource_id, session.get_bind().dialect.name))
             .order_by(ClassCandidate.rank, System.fqdn))
    if only is not None:
        query = query.where(System.id == only)
    free = list(session.execute(query).unique().scalars())
    healthy = set(health_state.gate_wait(uow, wait, [system.id for system in free], now))
    for system in free:
        if system.id not in healthy:
            continue
        loan = system_service.active_loan(uow, system)
        if not decide(holder, Permission.RESERVE, system_service.access_of(system, loan)):
            continue
        try:
            resource = calendar.lock_resource(uow, system.resource_id)
            if not holds.floor_allows(uow, holder, system, now, wait.force):
                continue  # stays in the line: a system of the pool freeing, or a lower floor, offers it again
            booking = calendar.book(session, resource, _capped(window, loan, holder), "reservation", holder.id, now)
        except BookingConflict:  # taken since the query: try the next one
            continue
        _granted(uow, wait, system, booking, now)
        return True
    return False


def _length(wait: ReservationWait) -> timedelta | None:
    return timedelta(seconds=wait.duration_seconds) if wait.duration_seconds is not None else None


def _capped(window, loan, holder: Actor):
    """A limited loan of the holder caps the reservation at its end, as for an immediate reserve."""
    if loan is None or loan.recipient_id != holder.id or loan.end_at is None:
        return window
    if window.end is None or loan.end_at < window.end:
        return rules.grant_window(window.start, loan.end_at - window.start)
    return window


def _granted(uow, wait: ReservationWait, system: System, booking: Booking, now: datetime) -> None:
    reservation = wait.reservation
    reservation.system_id, reservation.system, reservation.booking_id = system.id, system, booking.id
    reservation.start_at, reservation.end_at = booking.start_at, booking.end_at
    if reservation.heartbeat_seconds:
        reservation.last_heartbeat_at = now
    wait.status, wait.granted_at = "granted", now
    reservation.due_at = due_at(reservation)
    settings = uow.settings
    reservation.warn_at = warn_at(reservation.start_at, reservation.end_at, settings.warn_before,
                                  settings.warn_before_short)
    activity.record(uow, None, now, "reservation", reservation.id, "granted", "system", None, system.fqdn)
    activity.record(uow, None, now, "system", system.fqdn, "reserved", "reservation", None,
                    f"{reservation.id} until {format_time(reservation.end_at) or 'no limit'}")
    _tell_started(uow, reservation, wait, now)
    uow.wake_worker()


def _tell_started(uow, reservation: Reservation, wait: ReservationWait, now: datetime) -> None:
    fqdn, end = reservation.system.fqdn, format_time(reservation.end_at)
    confirm = (f" Confirm it by {format_time(now + timedelta(seconds=wait.take_by_seconds))} "
               f"(lablease heartbeat {reservation.id}) or it is returned.") if wait.take_by_seconds else ""
    text = f"Your reservation {reservation.id} of {fqdn} started; it ends at {end or 'no set time'}.{confirm}"
    notices.queue(uow, notices.Notice(
        reservation.user, "reservation.started", str(reservation.id), f"[lablease] your reservation of {fqdn} started",
        text, {"reservation": reservation.id, "system": fqdn, "start": format_time(reservation.start_at), "end": end}),
        now)


def due_at(reservation: Reservation) -> datetime | None:
    """The worker's deadline: the end, a missed heartbeat, or an unconfirmed take_by."""
    interval = timedelta(seconds=reservation.heartbeat_seconds) if reservation.heartbeat_seconds else None
    usual = reservation_rules.due_at(reservation.end_at, interval, reservation.last_heartbeat_at)
    return rules.due([usual, take_by_deadline(reservation)])


def take_by_deadline(reservation: Reservation) -> datetime | None:
    wait = reservation.wait
    if wait is None or wait.granted_at is None or not wait.take_by_seconds:
        return None
    return rules.take_by_deadline(wait.granted_at, timedelta(seconds=wait.take_by_seconds),
                                  wait.confirmed_at is not None)


def confirm(reservation: Reservation, now: datetime) -> bool:
    """A heartbeat or a PATCH of a granted reservation confirms it (take_by no longer applies)."""
    wait = reservation.wait
    if wait is None or wait.granted_at is None or wait.confirmed_at is not None or not wait.take_by_seconds:
        return False
    wait.confirmed_at = now
    return True


def not_taken(reservation: Reservation, now: datetime) -> bool:
    """Is the worker returning it because nobody confirmed it in time?"""
    deadline = take_by_deadline(reservation)
    return deadline is not None and deadline <= now


# --- the queue, as the scheduler and the listing see it -------------------------------------

def queue(uow, class_ids: list[int], page: int = 20):
    """Waiting reservations of these classes in scheduling order, as (*queue_key, -id): negative ids tell
    them from recipe-set ids in the one offer order (scheduling._offers)."""
    after = None
    while class_ids:
        query = (select(ReservationWait.priority, ReservationWait.queued_at, ReservationWait.reservation_id)
                 .where(ReservationWait.class_id.in_(class_ids), ReservationWait.status == WAITING)
                 .order_by(ReservationWait.priority.desc(), ReservationWait.queued_at, ReservationWait.reservation_id)
                 .limit(page))
        if after is not None:
            query = query.where(_behind(ReservationWait.priority, ReservationWait.queued_at,
                                        ReservationWait.reservation_id, *after))
        rows = uow.session.execute(query).all()
        for priority, queued_at, reservation_id in rows:
            yield (*queue_key(priority, queued_at, reservation_id), -reservation_id)
        if len(rows) < page:
            return
        after = rows[-1]


def _behind(priority, queued_at, key, p, q, k):
    """SQL: this row comes after (p, q, k) in scheduling order."""
    return or_(priority < p, and_(priority == p, or_(queued_at > q, and_(queued_at == q, key > k))))


def _ahead(priority, queued_at, key, p, q, k):
    return or_(priority > p, and_(priority == p, or_(queued_at < q, and_(queued_at == q, key < k))))


def offer(uow, reservation_id: int, system_id: int | None, now: datetime) -> None:
    """Offer a freed system (None: any of its free candidates). The wait's row is locked and its status read
    again first: two systems freed at once (PostgreSQL, two transactions) must not both go to the same
    waiting reservation."""
    session = uow.session
    status = session.execute(select(ReservationWait.status).where(ReservationWait.reservation_id == reservation_id)
                             .with_for_update()).scalar_one_or_none()
    if status == WAITING:
        try_grant(uow, session.get(ReservationWait, reservation_id), now, only=system_id)


def position(uow, wait: ReservationWait) -> int:
    """1 + the waiting reservations and recipe sets ahead of it that could take one of its systems."""
    session = uow.session
    mine = select(ClassCandidate.system_id).where(ClassCandidate.class_id == wait.class_id)
    rivals = select(ClassCandidate.class_id).where(ClassCandidate.system_id.in_(mine)).distinct()
    point = (wait.priority, wait.queued_at, wait.reservation_id)
    waits = session.execute(select(func.count()).select_from(ReservationWait).where(
        ReservationWait.class_id.in_(rivals), ReservationWait.status == WAITING,
        _ahead(ReservationWait.priority, ReservationWait.queued_at, ReservationWait.reservation_id, *point))).scalar()
    sets = session.execute(select(func.count(func.distinct(Recipe.recipe_set_id))).where(
        Recipe.class_id.in_(rivals), Recipe.status.in_(("queued", "assigned")),
        or_(Recipe.priority > wait.priority,
            and_(Recipe.priority == wait.priority, Recipe.queued_at <= wait.queued_at)))).scalar()
    return 1 + waits + sets


def estimate(uow, wait: ReservationWait, place: int, now: datetime) -> datetime | None:
    """From the calendar: the ends of the bookings holding its candidate systems now."""
    ends = uow.session.execute(
        select(Booking.end_at).join(System, System.resource_id == Booking.resource_id)
        .join(ClassCandidate, ClassCandidate.system_id == System.id)
        .where(ClassCandidate.class_id == wait.class_id, Booking.start_at <= now,
               or_(Booking.end_at.is_(None), Booking.end_at > now))).scalars()
    return rules.estimated_start(place, list(ends), now)


def waiting_fields(uow, reservation: Reservation, now: datetime) -> dict:
    """What GET /reservations adds for a reservation that waits (or waited): its place and estimate."""
    wait = reservation.wait
    if wait is None:
        return {}
    spec = uow.session.get(RequirementClass, wait.class_id).spec
    fields = {"wait": {"status": wait.status, "queued_at": format_time(wait.queued_at),
                       "granted_at": format_time(wait.granted_at), "duration": wait.duration_seconds,
                       "take_by": wait.take_by_seconds, "confirmed_at": format_time(wait.confirmed_at)},
              "waits_for": wanted_words(spec.get("force"), spec.get("host_requires")),
              "position": None, "estimated_start": None}
    if wait.status == WAITING:
        place = position(uow, wait)
        fields.update(position=place, estimated_start=format_time(estimate(uow, wait, place, now)),
                      state=WAITING)
    elif wait.status == "cancelled":
        fields["state"] = "cancelled"
    return fields


def cancel(uow, actor: Actor, reservation: Reservation, now: datetime) -> None:
    """Leave the line: returned before it got a system."""
    wait = reservation.wait
    wait.status = "cancelled"
    reservation.returned_at, reservation.return_reason = now, "cancelled"
    activity.record(uow, actor, now, "reservation", reservation.id, "cancelled", "state", WAITING, "cancelled")


def is_waiting(reservation: Reservation) -> bool:
    return reservation.wait is not None and reservation.wait.status == WAITING
