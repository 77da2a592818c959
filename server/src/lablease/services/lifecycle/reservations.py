"""Reservations of systems: list, extend, return, heartbeat, and the worker's expiry (reserving: booking/reserve.py)."""
from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import select

from ...domain import holds as rules_holds
from ...domain import reservations as rules
from ...domain.errors import Conflict, Forbidden, Invalid, NotFound
from ...domain.lease import refuse_returned
from ...domain.notices import warn_at
from ...domain.paging import Page, PageRequest
from ...domain.permissions import Actor, SiteAction, decide_site, may_manage_reservation, may_see_reservation
from ...domain.reserve import Made, answer
from ...domain.returns import expiry_reason
from ...domain.windows import Window
from ...store import calendar
from ...store import paging
from ...store.paging import Order
from ...store.tables import Booking, Loan, Reservation, User
from ..booking import endings, holds
from ..calendar import advance_work
from ..catalog import systems as system_service
from ..messages import notices
from ..queue import waitline
from ..records import activity, due


def as_dict(uow, reservation: Reservation, now: datetime) -> dict:
    columns = ("id", "kind", "start_at", "end_at", "returned_at", "return_reason", "return_loan", "heartbeat_seconds",
               "last_heartbeat_at", "due_at", "request_id", "ar_id", "purpose")
    fqdn = reservation.system.fqdn if reservation.system is not None else None  # None while it waits
    return {**render({name: getattr(reservation, name) for name in columns}, fqdn, reservation.user.name, now),
            **waitline.waiting_fields(uow, reservation, now)}


def render(values: dict, fqdn: str | None, holder: str, now: datetime) -> dict:
    """A reservation as the API shows it (domain/reserve.py `answer`), from its column values (an ORM row's
    or a Core row's)."""
    return answer(Made(values["id"], fqdn, holder, values["kind"], values["start_at"], values["end_at"], None,
                       values["return_loan"], values["heartbeat_seconds"], values["last_heartbeat_at"],
                       values["due_at"], values["returned_at"], values["return_reason"], values["request_id"],
                       values["ar_id"], values.get("purpose")), now)


def _access(reservation: Reservation):
    """The system's access, or None for a reservation still waiting for a system (its holder and admins only)."""
    return system_service.access_of(reservation.system) if reservation.system is not None else None


def loan_end_of(uow, system_id: int, holder_id: int) -> datetime | None:
    """The end of the holder's limited loan of the system, which caps their reservations."""
    loan = uow.session.execute(select(Loan).where(Loan.system_id == system_id, Loan.returned_at.is_(None),
                                              Loan.recipient_id == holder_id)).unique().scalar_one_or_none()
    return loan.end_at if loan is not None else None


def _get(uow, actor: Actor, reservation_id: int) -> Reservation:
    reservation = uow.session.get(Reservation, reservation_id)
    if reservation is None or not may_see_reservation(actor, reservation.user_id, _access(reservation)):
        raise NotFound(f"no reservation {reservation_id}")
    return reservation


def managed(uow, actor: Actor, reservation_id: int) -> Reservation:
    reservation = _get(uow, actor, reservation_id)
    decision = may_manage_reservation(actor, reservation.user_id, _access(reservation))
    if not decision:
        raise Forbidden(f"reservation {reservation_id}: {decision.reason}")
    return reservation


def get(uow, actor: Actor, now: datetime, reservation_id: int) -> dict:
    return as_dict(uow, _get(uow, actor, reservation_id), now)


def list_reservations(uow, actor: Actor, now: datetime, user: str | None = None, system: str | None = None,
                      active: bool | None = None, page: PageRequest = PageRequest()) -> Page:
    query = select(Reservation)
    if user:
        name = actor.name if user == "me" else user
        owner = uow.session.execute(select(User).where(User.name == name)).scalar_one_or_none()
        if owner is None:
            raise Invalid("user", f"no user named {name}")
        query = query.where(Reservation.user_id == owner.id)
    elif not decide_site(actor, SiteAction.VIEW_ALL_RESERVATIONS) and not system:
        query = query.where(Reservation.user_id == actor.id)
    if system:
        query = query.where(Reservation.system_id == system_service.find(uow, system, actor).id)
    if active is True:
        query = query.where(Reservation.returned_at.is_(None))
    elif active is False:
        query = query.where(Reservation.returned_at.is_not(None))
    found = paging.fetch(uow, "reservations", query,
                         [Order(Reservation.start_at, descending=True), Order(Reservation.id, descending=True)], page,
                         keep=lambda r: may_see_reservation(actor, r.user_id, _access(r)))
    return Page([as_dict(uow, r, now) for r in found.items], found.next_after)


def _open(reservation: Reservation, now: datetime | None = None) -> None:
    """Still held; `now`: a heartbeat or change by its holder also confirms a granted waiting reservation."""
    refuse_returned(reservation.id, reservation.returned_at, reservation.return_reason)
    if reservation.system_id is None:
        raise Conflict(f"reservation {reservation.id} is still waiting for a system")
    if now is not None and waitline.confirm(reservation, now):
        reservation.due_at = _due(reservation)


def extend(uow, actor: Actor, now: datetime, policy: rules.ReservationPolicy, reservation_id: int,
           end: datetime | None = None, extend_by: timedelta | None = None) -> dict:
    """Move the end of a reservation inside an advance reservation (services/lifecycle/lease.py extends the others)."""
    session = uow.session
    reservation = managed(uow, actor, reservation_id)
    _open(reservation, now)
    window = Window(reservation.start_at, reservation.end_at)
    new_end = rules.plan_new_end(now, policy, window, end, extend_by,
                                 loan_end=loan_end_of(uow, reservation.system_id, reservation.user_id))
    endings.keep_recipe_end(uow, reservation.id, reservation.kind, reservation.system.fqdn, reservation.end_at,
                            new_end)
    if reservation.ar_id is not None:
        advance_work.check_end_inside(uow, reservation.ar_id, new_end, "extend_by" if extend_by is not None else "end")
    resource = calendar.lock_resource(uow, reservation.system.resource_id)
    if reservation.kind == "manual" and reservation.end_at and new_end > reservation.end_at:  # HOOK (max hold): only a longer hold
        holds.keep_max_hold(uow, reservation.user_id, now,
                            rules_holds.remaining(reservation.start_at, new_end, now), exclude=reservation.id)
    booking = session.get(Booking, reservation.booking_id)
    calendar.change_end(session, resource, booking, new_end)
    old_end, reservation.end_at = reservation.end_at, new_end
    reservation.due_at = _due(reservation)
    reservation.warn_at = _warn_at(uow.settings, reservation)
    activity.record(uow, actor, now, "reservation", reservation.id, "extended", "end", old_end, new_end)
    uow.wake_worker()
    return as_dict(uow, reservation, now)


def _warn_at(settings, reservation: Reservation) -> datetime | None:
    return warn_at(reservation.start_at, reservation.end_at, settings.warn_before,
                   settings.warn_before_short)


def _due(reservation: Reservation) -> datetime | None:
    return waitline.due_at(reservation)  # the end, a missed heartbeat, an unconfirmed take_by


def set_heartbeat(uow, actor: Actor, now: datetime, reservation_id: int, interval: timedelta | None) -> dict:
    """Start, change or (None) stop the heartbeat of a reservation; the deadline counts from now."""
    reservation = managed(uow, actor, reservation_id)
    _open(reservation, now)
    old = reservation.heartbeat_seconds
    if interval is None:
        reservation.heartbeat_seconds, reservation.last_heartbeat_at = None, None
    else:
        reservation.heartbeat_seconds = int(rules.heartbeat_interval(interval).total_seconds())
        reservation.last_heartbeat_at = max(now, reservation.start_at)
    reservation.due_at = _due(reservation)
    activity.record(uow, actor, now, "reservation", reservation.id, "changed", "heartbeat", old,
                    reservation.heartbeat_seconds)
    uow.wake_worker()
    return as_dict(uow, reservation, now)


def heartbeat(uow, actor: Actor, now: datetime, reservation_id: int) -> dict:
    """The holder is still alive: the missed-heartbeat deadline moves on."""
    reservation = managed(uow, actor, reservation_id)
    confirming = waitline.take_by_deadline(reservation) is not None
    _open(reservation, now)
    if confirming and not reservation.heartbeat_seconds:  # it confirmed a granted waiting reservation
        uow.wake_worker()
        return as_dict(uow, reservation, now)
    if not reservation.heartbeat_seconds:
        raise Invalid("heartbeat", f"reservation {reservation_id} was made without a heartbeat interval")
    reservation.last_heartbeat_at = max(now, reservation.start_at)
    reservation.due_at = _due(reservation)
    uow.wake_worker()
    return as_dict(uow, reservation, now)


def return_reservation(uow, actor: Actor, now: datetime, reservation_id: int) -> dict:
    reservation = managed(uow, actor, reservation_id)
    if waitline.is_waiting(reservation):  # leaving the line: nothing was booked
        waitline.cancel(uow, actor, reservation, now)
        return as_dict(uow, reservation, now)
    _open(reservation)
    endings.close_reservation(uow, reservation, now, "returned", actor)
    return as_dict(uow, reservation, now)


def _expire(uow, reservation: Reservation, now: datetime) -> None:
    """Its end or heartbeat deadline has passed: return it."""
    reason = expiry_reason(reservation.end_at, reservation.due_at, waitline.not_taken(reservation, now))
    endings.close_reservation(uow, reservation, now, reason, None)


def _warn(uow, reservation: Reservation, now: datetime) -> None:
    """Queue the before-the-end warning."""
    reservation.warn_at = None
    notices.reservation_ending(uow, reservation, now)


EXPIRY = due.Step("reservation_expiry", "returned reservation", Reservation, Reservation.due_at,
                  Reservation.returned_at.is_(None), _expire, "reservation")
WARNING = due.Step("reservation_warning", "warned about reservation", Reservation, Reservation.warn_at,
                   Reservation.returned_at.is_(None), _warn, "reservation")
