"""Generic schedules: any subject's resources (IPs, VLANs, licence seats) on the calendar.

After the eiSoil schedule plugin: reserve / find / update / cancel, a
default duration per subject, a free-form resource_spec, a user and a slice.
A resource books exclusively unless an admin declared a capacity above 1.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import and_, or_, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from ...domain.calendar import Booking as Slot, peak_use
from ...domain.errors import Conflict, Forbidden, Invalid, NotFound
from ...domain.paging import Page, PageRequest
from ...domain.permissions import Actor, SiteAction, decide_site
from ...domain.times import START_TOLERANCE
from ...domain.times import format_time
from ...domain.windows import Window, window_between
from ...store import calendar
from ...store import paging
from ...store.paging import Order
from ...store.tables import Booking, Resource, ScheduleReservation, ScheduleSubject, User
from ...timeparse import format_duration
from ..people.users import check_name
from ..records import activity


def _admin(actor: Actor) -> None:
    decision = decide_site(actor, SiteAction.MANAGE_SCHEDULES)
    if not decision:
        raise Forbidden(decision.reason)


def _subject(uow, name: str) -> ScheduleSubject:
    subject = uow.session.execute(select(ScheduleSubject).where(ScheduleSubject.name == name)).scalar_one_or_none()
    if subject is None:
        raise NotFound(f"no schedule subject named {name} (an administrator creates it with PUT /api/v1/schedules/{name})")
    return subject


MAX_RESOURCE_NAME = 255


def _resource_key(subject: str, resource_name: str) -> str:
    return f"{subject}/{resource_name}"


def subject_dict(uow, subject: ScheduleSubject) -> dict:
    session = uow.session
    prefix = subject.name + "/"
    resources = session.execute(select(Resource).where(Resource.kind == "schedule", Resource.name.startswith(prefix, autoescape=True)))
    return {
        "name": subject.name,
        "default_duration": format_duration(timedelta(seconds=subject.default_duration_seconds)),
        "resources": {r.name[len(prefix):]: {"capacity": r.capacity} for r in resources.scalars()},
    }


def put_subject(uow, actor: Actor, now: datetime, name: str, default_duration: timedelta | None) -> tuple[dict, bool]:
    _admin(actor)
    check_name(name, "subject")
    session = uow.session
    subject = session.execute(select(ScheduleSubject).where(ScheduleSubject.name == name)).scalar_one_or_none()
    created = subject is None
    if created:
        subject = ScheduleSubject(name=name, created_at=now, default_duration_seconds=86400)
        session.add(subject)
    if default_duration is not None:
        activity.record(uow, actor, now, "schedule", name, "changed", "default_duration",
                        subject.default_duration_seconds, int(default_duration.total_seconds()))
        subject.default_duration_seconds = int(default_duration.total_seconds())
    session.flush()
    return subject_dict(uow, subject), created


def list_subjects(uow, page: PageRequest) -> Page:
    found = paging.fetch(uow, "schedules", select(ScheduleSubject), [Order(ScheduleSubject.name)], page)
    return Page([subject_dict(uow, s) for s in found.items], found.next_after)


def get_subject(uow, name: str) -> dict:
    return subject_dict(uow, _subject(uow, name))


def _ensure_resource(uow, key: str, capacity: int | None = None) -> Resource:
    """The calendar resource for a subject's resource, created on first use (race-free)."""
    session = uow.session
    insert = pg_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
    session.execute(insert(Resource).values(kind="schedule", name=key, capacity=capacity or 1).on_conflict_do_nothing())
    resource = session.execute(select(Resource).where(Resource.kind == "schedule", Resource.name == key)).scalar_one()
    return calendar.lock_resource(uow, resource.id)


def put_resource(uow, actor: Actor, now: datetime, subject_name: str, resource_name: str, capacity: int) -> dict:
    _admin(actor)
    _subject(uow, subject_name)
    if len(resource_name) > MAX_RESOURCE_NAME:  # as a booking's resource_id (api/schemas.py NAME)
        raise Invalid("resource_id", f"must be at most {MAX_RESOURCE_NAME} characters")
    if not isinstance(capacity, int) or isinstance(capacity, bool) or capacity < 1:
        raise Invalid("capacity", "must be a whole number of at least 1")
    resource = _ensure_resource(uow, _resource_key(subject_name, resource_name), capacity)
    if capacity != resource.capacity:
        _check_capacity_change(uow, resource, capacity, now)
        activity.record(uow, actor, now, "schedule", resource.name, "changed", "capacity", resource.capacity, capacity)
        resource.capacity = capacity
        uow.session.flush()
    return {"subject": subject_name, "resource_id": resource_name, "capacity": resource.capacity}


def _check_capacity_change(uow, resource: Resource, capacity: int, now: datetime) -> None:
    """Lowering a capacity may not overbook what is already booked from now on."""
    existing = calendar.touching(uow.session, resource.id, Window(now, None))
    peak, _ = peak_use([Slot(b.id, Window(b.start_at, b.end_at), b.quantity) for b in existing], Window(now, None))
    if peak > capacity:
        raise Conflict(f"{resource.name} has {peak} booked at once from now on; capacity {capacity} is too small")
    for booking in existing:
        booking.exclusive = capacity == 1


def as_dict(row: ScheduleReservation, subject: str) -> dict:
    return {
        "id": row.id,
        "subject": subject,
        "resource_id": row.resource_name,
        "resource_spec": row.resource_spec or {},
        "user": row.user.name,
        "slice": row.slice,
        "start": format_time(row.start_at),
        "end": format_time(row.end_at),
        "quantity": row.quantity,
    }


def _window(now: datetime, subject: ScheduleSubject, start, end, duration) -> Window:
    if start is not None and start < now - START_TOLERANCE:
        raise Invalid("start", "is in the past")
    start = max(start or now, now)
    if end is not None and duration is not None:
        raise Invalid("duration", "give either end or duration, not both")
    if duration is not None:
        end = start + duration
    if end is None:
        end = start + timedelta(seconds=subject.default_duration_seconds)
    return window_between(start, end)


def _holder(uow, actor: Actor, user: str | None) -> User:
    session = uow.session
    if user is None or user == actor.name:
        return session.get(User, actor.id)
    _admin(actor)  # booking on behalf of someone else
    holder = session.execute(select(User).where(User.name == user)).scalar_one_or_none()
    if holder is None:
        raise Invalid("user", f"no user named {user}")
    return holder


def reserve(uow, actor: Actor, now: datetime, subject_name: str, data: dict) -> dict:
    session = uow.session
    subject = _subject(uow, subject_name)
    resource_name = data["resource_id"]
    window = _window(now, subject, data.get("start"), data.get("end"), data.get("duration"))
    holder = _holder(uow, actor, data.get("user"))
    quantity = data.get("quantity", 1)
    resource = _ensure_resource(uow, _resource_key(subject.name, resource_name))
    booking = calendar.book(session, resource, window, "schedule", holder.id, now, quantity)
    row = ScheduleReservation(
        subject_id=subject.id, resource_name=resource_name, resource_spec=data.get("resource_spec") or {},
        user_id=holder.id, slice=data.get("slice"), start_at=window.start, end_at=window.end,
        quantity=quantity, booking_id=booking.id, created_at=now,
    )
    session.add(row)
    session.flush()
    session.refresh(row)
    activity.record(uow, actor, now, "schedule", f"{subject.name}/{row.id}", "reserved", "resource", None, resource_name)
    return as_dict(row, subject.name)


def find(uow, now: datetime, subject_name: str, filters: dict, page: PageRequest) -> Page:
    """Every live booking of the subject matching the filters and touching [start, end)."""
    subject = _subject(uow, subject_name)
    query = select(ScheduleReservation).where(
        ScheduleReservation.subject_id == subject.id, ScheduleReservation.cancelled_at.is_(None))
    if filters.get("resource_id"):
        query = query.where(ScheduleReservation.resource_name == filters["resource_id"])
    if filters.get("slice"):
        query = query.where(ScheduleReservation.slice == filters["slice"])
    if filters.get("user"):
        query = query.join(User, User.id == ScheduleReservation.user_id).where(User.name == filters["user"])
    if filters.get("start") or filters.get("end"):
        window = window_between(filters.get("start") or now, filters.get("end"),
                                "start" if filters.get("start") else "now")
        query = query.where(or_(ScheduleReservation.end_at.is_(None), ScheduleReservation.end_at > window.start))
        if window.end is not None:
            query = query.where(and_(ScheduleReservation.start_at < window.end))
    found = paging.fetch(uow, f"schedule/{subject.name}", query,
                         [Order(ScheduleReservation.start_at), Order(ScheduleReservation.id)], page)
    return Page([as_dict(row, subject.name) for row in found.items], found.next_after)


def _owned(uow, actor: Actor, subject: ScheduleSubject, booking_id: int) -> ScheduleReservation:
    row = uow.session.get(ScheduleReservation, booking_id)
    if row is None or row.subject_id != subject.id or row.cancelled_at is not None:
        raise NotFound(f"no booking {booking_id} in schedule {subject.name}")
    if row.user_id != actor.id and not actor.is_admin:
        raise Forbidden(f"booking {booking_id} belongs to {row.user.name}")
    return row


def get(uow, now: datetime, subject_name: str, booking_id: int) -> dict:
    subject = _subject(uow, subject_name)
    row = uow.session.get(ScheduleReservation, booking_id)
    if row is None or row.subject_id != subject.id or row.cancelled_at is not None:
        raise NotFound(f"no booking {booking_id} in schedule {subject.name}")
    return as_dict(row, subject.name)


def update(uow, actor: Actor, now: datetime, subject_name: str, booking_id: int, data: dict) -> dict:
    """Move a booking's window or change its spec or slice; the calendar is checked again."""
    session = uow.session
    subject = _subject(uow, subject_name)
    row = _owned(uow, actor, subject, booking_id)
    resource = calendar.lock_resource(uow, session.get(Booking, row.booking_id).resource_id)
    if any(key in data for key in ("start", "end", "duration")):
        start = data.get("start") or row.start_at
        end = data.get("end")
        if data.get("duration") is not None:
            end = start + data["duration"]
        window = window_between(start, end if end is not None else row.end_at)
        booking = session.get(Booking, row.booking_id)
        calendar.check_free(session, resource, window, row.quantity, exclude=booking.id)
        for field, old, new in (("start", row.start_at, window.start), ("end", row.end_at, window.end)):
            if old != new:
                activity.record(uow, actor, now, "schedule", f"{subject.name}/{row.id}", "changed", field, old, new)
        booking.start_at = row.start_at = window.start
        booking.end_at = row.end_at = window.end
    for key in ("resource_spec", "slice"):
        if key in data:
            setattr(row, key, data[key])
    session.flush()
    return as_dict(row, subject.name)


def cancel(uow, actor: Actor, now: datetime, subject_name: str, booking_id: int) -> None:
    session = uow.session
    subject = _subject(uow, subject_name)
    row = _owned(uow, actor, subject, booking_id)
    row.cancelled_at = now
    if row.booking_id is not None:
        booking = session.get(Booking, row.booking_id)
        row.booking_id = None
        session.delete(booking)
    activity.record(uow, actor, now, "schedule", f"{subject.name}/{row.id}", "cancelled")
