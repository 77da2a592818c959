"""Loans: lend a system to one user, extend, return; the worker's loan expiry."""
from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import select

from ...domain import loans as rules
from ...domain.errors import Conflict, Forbidden, Invalid, NotFound
from ...domain.events import SystemRemoved
from ...domain.notices import warn_at
from ...domain.paging import Page, PageRequest
from ...domain.permissions import Actor
from ...domain.recipes import FINISHED
from ...domain.times import format_time
from ...store import paging
from ...store.paging import Order
from ...store.tables import Loan, Recipe, Reservation, System, User
from ..booking import endings, holds
from ..catalog import systems as system_service
from ..messages import notices
from ..provisioning import guests
from ..queue.placement import refresh_rollups, release
from ..records import activity, due
from .jobs import finish


def as_dict(loan: Loan, fqdn: str) -> dict:
    return {
        "id": loan.id,
        "system": fqdn,
        "recipient": loan.recipient.name,
        "lender": loan.lender.name if loan.lender else None,
        "start": format_time(loan.start_at),
        "end": format_time(loan.end_at),
        "comment": loan.comment,
        "returned_at": format_time(loan.returned_at),
        "return_reason": loan.return_reason,
        "purpose": loan.purpose,
    }


def _check(decision, fqdn: str) -> None:
    if not decision:
        raise Forbidden(f"{fqdn}: {decision.reason}")


def _warn_at(settings, loan: Loan) -> datetime | None:
    return warn_at(loan.start_at, loan.end_at, settings.warn_before, settings.warn_before_short)


def _held(uow, system) -> list[rules.Held]:
    open_ = uow.session.execute(select(Reservation).where(
        Reservation.system_id == system.id, Reservation.returned_at.is_(None))).unique().scalars()
    return [rules.Held(r.id, r.user_id, r.user.name, r.start_at, r.end_at) for r in open_]


def _return_for_loan(uow, actor: Actor, now: datetime, blocking: list[rules.Held], recipient: str) -> None:
    """Forced: the reservations in the way are returned (a recipe on one is aborted); holders are told."""
    _take_back(uow, actor, now, [uow.session.get(Reservation, held.reservation) for held in blocking], "lent_away",
               f"its system was lent to {recipient}")


def _take_back(uow, actor: Actor, now: datetime, reservations: list[Reservation], reason: str, why: str) -> None:
    """Forced: reservations returned with `reason` (a recipe on one is aborted, saying `why`); holders are told."""
    for reservation in reservations:
        recipe = uow.session.execute(select(Recipe).where(Recipe.reservation_id == reservation.id,
                                                      Recipe.status.notin_(FINISHED))).unique().scalar_one_or_none()
        if recipe is not None and recipe.status == "assigned":  # only holding it for its set: queue again
            release(uow, recipe.recipe_set, now)
        elif recipe is not None:
            finish(uow, recipe, "aborted", now, actor)
            activity.record(uow, actor, now, "recipe", recipe.id, "aborted", "reason", None, why)
            refresh_rollups(uow, recipe.recipe_set, now)
        if reservation.returned_at is None:  # (a recipe's reservesys may have kept it)
            endings.close_reservation(uow, reservation, now, reason, actor)
        activity.record(uow, actor, now, "reservation", reservation.id, reason, "reason", None, f"{why} (forced)")


def on_system_removed(uow, event: SystemRemoved) -> None:
    """A system removed while held or lent (forced): its reservations are returned, a recipe on one aborted,
    and its loan ends; each holder is told."""
    session = uow.session
    open_ = session.execute(select(Reservation).where(Reservation.system_id == event.system_id,
                                                      Reservation.returned_at.is_(None))
                            .order_by(Reservation.id)).unique().scalars().all()
    _take_back(uow, event.actor, event.now, list(open_), "removed", "its system was removed")
    loan = session.execute(select(Loan).where(Loan.system_id == event.system_id,
                                              Loan.returned_at.is_(None))).unique().scalar_one_or_none()
    if loan is not None:
        endings.close_loan(uow, loan, event.now, "removed", event.actor)


def grant(uow, actor: Actor, now: datetime, asked: rules.LoanRequest) -> dict:
    """Lend the system; refused while another user holds a reservation on it, unless forced
    (then those reservations are returned and their holders told), and when it would take the last
    idle Automated systems of a pool with a floor (admins may force that)."""
    session, recipient, force = uow.session, asked.recipient, asked.force
    system = system_service.find(uow, asked.fqdn, actor)
    guests.refuse(system, "lent")
    user = session.execute(select(User).where(User.name == recipient)).scalar_one_or_none()
    if user is None:
        raise Invalid("recipient", f"no user named {recipient}")
    current = system_service.active_loan(uow, system)
    _check(rules.may_lend(actor, user.id, system_service.access_of(system, current)), system.fqdn)
    if current is not None:
        until = format_time(current.end_at) or "further notice"
        raise Conflict(f"{system.fqdn} is already lent to {current.recipient.name} until {until}")
    purpose = holds.purpose_of(uow.settings, asked.purpose)  # HOOK (purpose)
    blocking = rules.in_the_way(user.id, now, _held(uow, system))
    if not force:
        rules.refuse_lending_over(system.fqdn, user.name, blocking)
    holds.keep_floor(uow, actor, system, now, force)  # HOOK (floor)
    default = uow.settings.default_loan_duration if uow.settings else timedelta(days=7)
    loan = Loan(system_id=system.id, recipient_id=user.id, lender_id=actor.id or None, start_at=now,
                end_at=rules.plan_loan_end(now, asked.duration, asked.limited, default), comment=asked.comment,
                purpose=purpose,
                created_at=now)
    loan.warn_at = _warn_at(uow.settings, loan)
    session.add(loan)
    session.flush()
    session.refresh(loan)
    activity.record(uow, actor, now, "system", system.fqdn, "lent", "loan", None,
                    f"{user.name} until {format_time(loan.end_at) or 'no limit'}")
    _return_for_loan(uow, actor, now, blocking, user.name)
    uow.wake_worker()
    return as_dict(loan, system.fqdn)


def _current(uow, actor: Actor, fqdn: str):
    system = system_service.find(uow, fqdn, actor)
    loan = system_service.active_loan(uow, system)
    if loan is None:
        raise NotFound(f"{system.fqdn} is not lent to anybody")
    return system, loan


def show(uow, actor: Actor, fqdn: str) -> dict:
    system, loan = _current(uow, actor, fqdn)
    return as_dict(loan, system.fqdn)


def extend(uow, actor: Actor, now: datetime, fqdn: str, end: datetime | None = None,
           extend_by: timedelta | None = None) -> dict:
    system, loan = _current(uow, actor, fqdn)
    _check(rules.may_extend_loan(actor, loan.recipient_id, system_service.access_of(system, loan)), system.fqdn)
    new_end = rules.plan_loan_extension(now, loan.end_at, end, extend_by)
    activity.record(uow, actor, now, "system", system.fqdn, "loan_extended", "loan end", loan.end_at, new_end)
    loan.end_at = new_end
    loan.warn_at = _warn_at(uow.settings, loan)
    uow.wake_worker()
    return as_dict(loan, system.fqdn)


def give_back(uow, actor: Actor, now: datetime, fqdn: str) -> None:
    """Return the loan (the recipient) or take it back (anyone with loan_any)."""
    system, loan = _current(uow, actor, fqdn)
    _check(rules.may_return_loan(actor, loan.recipient_id, system_service.access_of(system, loan)), system.fqdn)
    reason = "returned" if actor.id == loan.recipient_id else "taken_back"
    endings.close_loan(uow, loan, now, reason, actor)


def lent_to(uow, actor: Actor, now: datetime) -> list[dict]:
    """The loans the actor holds now (their page, their calendar feed)."""
    query = (select(Loan, System.fqdn).join(System, System.id == Loan.system_id)
             .where(Loan.recipient_id == actor.id, Loan.returned_at.is_(None), Loan.start_at <= now)
             .order_by(Loan.start_at))
    return [as_dict(loan, fqdn) for loan, fqdn in uow.session.execute(query).unique()]


def history(uow, actor: Actor, fqdn: str, page: PageRequest) -> Page:
    system = system_service.find(uow, fqdn, actor)
    found = paging.fetch(uow, "loans", select(Loan).where(Loan.system_id == system.id),
                         [Order(Loan.start_at, descending=True), Order(Loan.id, descending=True)], page)
    return Page([as_dict(loan, system.fqdn) for loan in found.items], found.next_after)


def _expire(uow, loan: Loan, now: datetime) -> None:
    endings.close_loan(uow, loan, now, "expired", None)


def _warn(uow, loan: Loan, now: datetime) -> None:
    loan.warn_at = None
    notices.loan_ending(uow, loan, system_service.fqdn_of(uow, loan.system_id), now)


EXPIRY = due.Step("loan_expiry", "returned loan", Loan, Loan.end_at, Loan.returned_at.is_(None), _expire)
WARNING = due.Step("loan_warning", "warned about loan", Loan, Loan.warn_at, Loan.returned_at.is_(None), _warn)
