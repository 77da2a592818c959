"""Reservations of systems: reserve, extend, return, heartbeat, and the worker's expiry."""
from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import object_session

from ..domain import reservations as rules
from ..domain import holds as rules_holds
from ..domain import retries
from ..domain.lease import refuse_returned
from ..domain.errors import Conflict, Forbidden, Invalid, NotFound
from ..domain.notices import warn_at
from ..domain.permissions import Actor, Permission, SiteAction, decide_site, may_manage_reservation, may_see_reservation
from ..domain.windows import Window
from ..store import calendar
from ..store.tables import Booking, Loan, Reservation, User
from ..domain.times import format_time
from . import activity, advance_work, due, endings, guests, health, holds, notices, waitline
from . import systems as system_service
from ..domain.paging import Page, PageRequest
from ..store import paging
from ..store.paging import Order


def as_dict(reservation: Reservation, now: datetime) -> dict:
    columns = ("id", "kind", "start_at", "end_at", "returned_at", "return_reason", "return_loan", "heartbeat_seconds",
               "last_heartbeat_at", "due_at", "request_id", "ar_id", "purpose")
    fqdn = reservation.system.fqdn if reservation.system is not None else None  # None while it waits
    return {**render({name: getattr(reservation, name) for name in columns}, fqdn, reservation.user.name, now),
            **waitline.waiting_fields(object_session(reservation), reservation, now)}


def render(values: dict, fqdn: str, holder: str, now: datetime) -> dict:
    """A reservation as the API shows it, from its column values (an ORM row's or a Core row's)."""
    end, returned_at = values["end_at"], values["returned_at"]
    return {
        "id": values["id"],
        "system": fqdn,
        "user": holder,
        "kind": values["kind"],
        "start": format_time(values["start_at"]),
        "end": format_time(end),
        "returned_at": format_time(returned_at),
        "state": rules.state(values["start_at"], returned_at, values["return_reason"], now),
        "return_loan": values["return_loan"],
        "heartbeat": values["heartbeat_seconds"],
        "last_heartbeat": format_time(values["last_heartbeat_at"]),
        "due": format_time(values["due_at"]),
        "seconds_left": max(0, int((end - now).total_seconds())) if end and returned_at is None else None,
        "request_id": values["request_id"],
        "advance_reservation": values["ar_id"],
        "purpose": values.get("purpose"),
    }


def _access(reservation: Reservation):
    """The system's access, or None for a reservation still waiting for a system (its holder and admins only)."""
    return system_service.access_of(reservation.system) if reservation.system is not None else None


def _by_request_id(session, actor: Actor, request_id: str | None) -> Reservation | None:
    if not request_id:
        return None
    query = select(Reservation).where(Reservation.user_id == actor.id, Reservation.request_id == request_id)
    return session.execute(query).unique().scalar_one_or_none()


def _retried(previous: Reservation, asked: retries.ReserveAsked, now: datetime) -> dict:
    """The reservation a retried request made, if the retry asks for the same thing (409 otherwise)."""
    made = retries.ReserveMade(
        previous.system.fqdn, previous.created_at, previous.start_at, previous.end_at, previous.return_loan,
        timedelta(seconds=previous.heartbeat_seconds) if previous.heartbeat_seconds else None, previous.ar_id,
        previous.returned_at is not None)
    retries.refuse_changed_retry(previous.request_id, f"reservation {previous.id}",
                                 retries.reserve_differences(asked, made))
    return as_dict(previous, now)


def reserve(uow, actor: Actor, now: datetime, policy: rules.ReservationPolicy, system: str,
            start: datetime | None = None, end: datetime | None = None, duration=None,
            return_loan: bool = False, heartbeat: timedelta | None = None, request_id: str | None = None,
            advance_reservation: int | None = None, purpose: str | None = None,
            force: bool = False, healthy_within: timedelta | None = None) -> tuple[dict, bool]:
    """Book the system for the caller; returns (reservation, created).

    A request_id seen before returns that same reservation (created False),
    so a client may retry a reserve whose answer it never got; a different
    request with that id is refused (409 naming what differs).
    """
    session = uow.session
    asked = retries.ReserveAsked(system, start, end, duration, return_loan, heartbeat, advance_reservation)
    previous = _by_request_id(session, actor, request_id)
    if previous is not None:
        return _retried(previous, asked, now), False
    target = system_service.find(session, system, actor)
    guests.refuse(target, "reserved")
    loan = system_service.active_loan(session, target)
    if advance_reservation is None:
        system_service.require(session, actor, Permission.RESERVE, target, loan)
    if healthy_within is not None:
        health.require_recent(session, target, healthy_within, now)  # 409 without a recent passing check
    loan_end = loan.end_at if loan is not None and loan.recipient_id == actor.id else None
    if advance_reservation is not None and end is None and duration is None:
        end = advance_work.window_end(session, advance_reservation)  # until the AR's end, not the site default
    window = rules.plan_window(now, policy, start, end, duration, loan_end=loan_end)
    purpose = holds.purpose_of(uow.settings, purpose)  # HOOK (purpose)
    if heartbeat is not None:
        heartbeat = rules.heartbeat_interval(heartbeat)
    if advance_reservation is not None:  # the AR's ACL grants the use; it books on the AR's calendar
        _, resource = advance_work.slot_for_reservation(session, actor, advance_reservation, target, window.start,
                                                   window.end)
    else:
        resource = calendar.lock_resource(session, target.resource_id)
    if request_id and (previous := _by_request_id(session, actor, request_id)) is not None:
        return _retried(previous, asked, now), False  # a retry that raced its first attempt
    if advance_reservation is None:  # HOOK (floor): inside an AR the system is the AR's, not the scheduler's
        holds.keep_floor(session, actor, target, now, force)
    holds.keep_max_hold(session, uow.settings, actor.id, now, rules_holds.remaining(window.start, window.end, now))
    booking = calendar.book(session, resource, window, "reservation", actor.id, now)
    reservation = Reservation(
        system_id=target.id, user_id=actor.id, booking_id=booking.id, kind="manual",
        start_at=window.start, end_at=window.end, return_loan=return_loan,
        heartbeat_seconds=int(heartbeat.total_seconds()) if heartbeat else None,
        last_heartbeat_at=window.start if heartbeat else None, request_id=request_id, created_at=now,
        ar_id=advance_reservation, purpose=purpose,
    )
    reservation.due_at = rules.due_at(window.end, heartbeat, reservation.last_heartbeat_at)
    reservation.warn_at = _warn_at(uow.settings, reservation)
    session.add(reservation)
    try:
        session.flush()
    except IntegrityError:  # the same request_id raced in from a retry on another connection
        raise Invalid("request_id", "was used by a concurrent request; retry to get its reservation") from None
    reservation.system, reservation.user = target, session.get(User, actor.id)
    activity.record(session, actor, now, "reservation", reservation.id, "reserved", "system", None, target.fqdn)
    activity.record(session, actor, now, "system", target.fqdn, "reserved", "reservation", None,
                    f"{reservation.id} until {format_time(window.end) or 'no limit'}")
    uow.wake_worker()
    return as_dict(reservation, now), True


def loan_end_of(session, system_id: int, holder_id: int) -> datetime | None:
    """The end of the holder's limited loan of the system, which caps their reservations."""
    loan = session.execute(select(Loan).where(Loan.system_id == system_id, Loan.returned_at.is_(None),
                                              Loan.recipient_id == holder_id)).unique().scalar_one_or_none()
    return loan.end_at if loan is not None else None


def _get(session, actor: Actor, reservation_id: int) -> Reservation:
    reservation = session.get(Reservation, reservation_id)
    if reservation is None or not may_see_reservation(actor, reservation.user_id, _access(reservation)):
        raise NotFound(f"no reservation {reservation_id}")
    return reservation


def managed(session, actor: Actor, reservation_id: int) -> Reservation:
    reservation = _get(session, actor, reservation_id)
    decision = may_manage_reservation(actor, reservation.user_id, _access(reservation))
    if not decision:
        raise Forbidden(f"reservation {reservation_id}: {decision.reason}")
    return reservation


def get(uow, actor: Actor, now: datetime, reservation_id: int) -> dict:
    return as_dict(_get(uow.session, actor, reservation_id), now)


def list_reservations(uow, actor: Actor, now: datetime, user: str | None = None, system: str | None = None,
                      active: bool | None = None, page: PageRequest = PageRequest()) -> Page:
    session = uow.session
    query = select(Reservation)
    if user:
        name = actor.name if user == "me" else user
        owner = session.execute(select(User).where(User.name == name)).scalar_one_or_none()
        if owner is None:
            raise Invalid("user", f"no user named {name}")
        query = query.where(Reservation.user_id == owner.id)
    elif not decide_site(actor, SiteAction.VIEW_ALL_RESERVATIONS) and not system:
        query = query.where(Reservation.user_id == actor.id)
    if system:
        query = query.where(Reservation.system_id == system_service.find(session, system, actor).id)
    if active is True:
        query = query.where(Reservation.returned_at.is_(None))
    elif active is False:
        query = query.where(Reservation.returned_at.is_not(None))
    found = paging.fetch(uow, "reservations", query,
                         [Order(Reservation.start_at, descending=True), Order(Reservation.id, descending=True)], page,
                         keep=lambda r: may_see_reservation(actor, r.user_id, _access(r)))
    return Page([as_dict(r, now) for r in found.items], found.next_after)


def _open(reservation: Reservation, now: datetime | None = None) -> None:
    """Still held; `now`: a heartbeat or change by its holder also confirms a granted waiting reservation."""
    refuse_returned(reservation.id, reservation.returned_at)
    if reservation.system_id is None:
        raise Conflict(f"reservation {reservation.id} is still waiting for a system")
    if now is not None and waitline.confirm(reservation, now):
        reservation.due_at = _due(reservation)


def extend(uow, actor: Actor, now: datetime, policy: rules.ReservationPolicy, reservation_id: int,
           end: datetime | None = None, extend_by: timedelta | None = None) -> dict:
    """Move the end of a reservation inside an advance reservation (services/lease.py extends the others)."""
    session = uow.session
    reservation = managed(session, actor, reservation_id)
    _open(reservation, now)
    window = Window(reservation.start_at, reservation.end_at)
    new_end = rules.plan_new_end(now, policy, window, end, extend_by,
                                 loan_end=loan_end_of(session, reservation.system_id, reservation.user_id))
    if reservation.ar_id is not None:
        advance_work.check_end_inside(session, reservation.ar_id, new_end, "extend_by" if extend_by is not None else "end")
    resource = calendar.lock_resource(session, reservation.system.resource_id)
    if reservation.kind == "manual" and reservation.end_at and new_end > reservation.end_at:  # HOOK (max hold): only a longer hold
        holds.keep_max_hold(session, uow.settings, reservation.user_id, now,
                            rules_holds.remaining(reservation.start_at, new_end, now), exclude=reservation.id)
    booking = session.get(Booking, reservation.booking_id)
    calendar.change_end(session, resource, booking, new_end)
    old_end, reservation.end_at = reservation.end_at, new_end
    reservation.due_at = _due(reservation)
    reservation.warn_at = _warn_at(uow.settings, reservation)
    activity.record(session, actor, now, "reservation", reservation.id, "extended", "end", old_end, new_end)
    uow.wake_worker()
    return as_dict(reservation, now)


def _warn_at(settings, reservation: Reservation) -> datetime | None:
    if settings is None:
        return None
    return warn_at(reservation.start_at, reservation.end_at, settings.warn_before,
                   settings.warn_before_short)


def _due(reservation: Reservation) -> datetime | None:
    return waitline.due_at(reservation)  # the end, a missed heartbeat, an unconfirmed take_by


def set_heartbeat(uow, actor: Actor, now: datetime, reservation_id: int, interval: timedelta | None) -> dict:
    """Start, change or (None) stop the heartbeat of a reservation; the deadline counts from now."""
    reservation = managed(uow.session, actor, reservation_id)
    _open(reservation, now)
    old = reservation.heartbeat_seconds
    if interval is None:
        reservation.heartbeat_seconds, reservation.last_heartbeat_at = None, None
    else:
        reservation.heartbeat_seconds = int(rules.heartbeat_interval(interval).total_seconds())
        reservation.last_heartbeat_at = max(now, reservation.start_at)
    reservation.due_at = _due(reservation)
    activity.record(uow.session, actor, now, "reservation", reservation.id, "changed", "heartbeat", old,
                    reservation.heartbeat_seconds)
    uow.wake_worker()
    return as_dict(reservation, now)


def heartbeat(uow, actor: Actor, now: datetime, reservation_id: int) -> dict:
    """The holder is still alive: the missed-heartbeat deadline moves on."""
    reservation = managed(uow.session, actor, reservation_id)
    confirming = waitline.take_by_deadline(reservation) is not None
    _open(reservation, now)
    if confirming and not reservation.heartbeat_seconds:  # it confirmed a granted waiting reservation
        uow.wake_worker()
        return as_dict(reservation, now)
    if not reservation.heartbeat_seconds:
        raise Invalid("heartbeat", f"reservation {reservation_id} was made without a heartbeat interval")
    reservation.last_heartbeat_at = max(now, reservation.start_at)
    reservation.due_at = _due(reservation)
    uow.wake_worker()
    return as_dict(reservation, now)


def return_reservation(uow, actor: Actor, now: datetime, reservation_id: int) -> dict:
    reservation = managed(uow.session, actor, reservation_id)
    if waitline.is_waiting(reservation):  # leaving the line: nothing was booked
        waitline.cancel(uow.session, actor, reservation, now)
        return as_dict(reservation, now)
    _open(reservation)
    endings.close_reservation(uow.session, reservation, now, "returned", actor, uow.settings)
    return as_dict(reservation, now)


def _expire(uow, reservation: Reservation, now: datetime) -> None:
    """Its end or heartbeat deadline has passed: return it."""
    missed = reservation.end_at is None or reservation.due_at < reservation.end_at
    reason = "not_taken" if waitline.not_taken(reservation, now) else "heartbeat_missed" if missed else "expired"
    endings.close_reservation(uow.session, reservation, now, reason, None, uow.settings)


def _warn(uow, reservation: Reservation, now: datetime) -> None:
    """Queue the before-the-end warning."""
    reservation.warn_at = None
    notices.reservation_ending(uow.session, uow.settings, reservation, now)


EXPIRY = due.Step("reservation_expiry", "returned reservation", Reservation, Reservation.due_at,
                  Reservation.returned_at.is_(None), _expire, "reservation")
WARNING = due.Step("reservation_warning", "warned about reservation", Reservation, Reservation.warn_at,
                   Reservation.returned_at.is_(None), _warn, "reservation")
