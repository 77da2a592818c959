"""Ending reservations and loans, with what follows from it.

- A reservation ends: its calendar slot is freed from now; with
  `return_loan` the holder's loan of the system ends too.
- A loan ends: every open reservation of a user who thereby loses the right
  to reserve the system is returned (reason `loan_ended`).
- Whatever the server ends by itself (the worker, a cascade) is told to the
  holder through the outbox.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from ...domain import recipes as recipe_rules
from ...domain.events import RecipeSystemTaken, ReservationClosed, SystemFreed
from ...domain.permissions import Actor, Permission, decide
from ...domain.returns import WHY, tells_holder
from ...domain.times import format_time
from ...store import calendar
from ...store.tables import Booking, Loan, Recipe, Reservation, System
from ..catalog.systems import access_of
from ..messages import notices
from ..people.users import actor_for
from ..records import activity


def close_reservation(uow, reservation: Reservation, now: datetime, reason: str, actor: Actor | None) -> None:
    """End a reservation now, free its slot, and follow through (return_loan, notices).

    A reservation a recipe still holds its system by ends only with its recipe: handed back by a person it
    is refused (409 naming the recipe and what to do); ended by the server (a removed system, a loan that
    ended) its recipe is ended first. The database refuses the rest (migration 0024)."""
    session = uow.session
    recipe = _holding_recipe(uow, reservation)
    if recipe is not None:
        if reason == "returned":
            raise recipe_rules.refuse_return(reservation.id, recipe.id, recipe.job_id, recipe.status,
                                             reservation.system.fqdn)
        uow.emit(RecipeSystemTaken(recipe.id, now, WHY.get(reason, reason)))  # ends it (services/lifecycle/jobs.py)
        if reservation.returned_at is not None:
            return  # the recipe's end returned it; a reservesys left it open: it ends here
    reservation.returned_at = now
    reservation.return_reason = reason
    reservation.due_at = reservation.warn_at = None
    if reservation.end_at is None or reservation.end_at > now:
        reservation.end_at = max(now, reservation.start_at)
    if reservation.booking_id is not None:
        booking = session.get(Booking, reservation.booking_id)
        if booking.start_at >= now:
            reservation.booking_id = None
        calendar.release(session, booking, now)
        uow.emit(SystemFreed(reservation.system_id, now))
    activity.record(uow, actor, now, "reservation", reservation.id, reason, "state", "active", reason)
    activity.record(uow, actor, now, "system", reservation.system.fqdn, reason, "reservation", reservation.id, None)
    uow.emit(ReservationClosed(reservation.id, now, reason))  # its installation stops, the release action runs
    if tells_holder(reason, actor is not None and actor.id == reservation.user_id):
        notices.reservation_returned(uow, reservation, now, WHY.get(reason, reason))
    if reservation.return_loan and reason != "loan_ended":
        loan = _holder_loan(uow, reservation)
        if loan is not None:
            close_loan(uow, loan, now, "returned_with_reservation", actor)


def _holding_recipe(uow, reservation: Reservation) -> Recipe | None:
    """The unfinished recipe holding its system by this reservation (the query flushes the caller's pending
    changes first, so a recipe just finished or detached is seen as it is now)."""
    if reservation.kind != "recipe":
        return None
    return _recipe_holding_by(uow, reservation.id)


def _recipe_holding_by(uow, reservation_id: int) -> Recipe | None:
    return uow.session.execute(select(Recipe).where(Recipe.reservation_id == reservation_id,
                                                Recipe.status.in_(recipe_rules.HOLDING))).unique().scalar_one_or_none()


def keep_recipe_end(uow, reservation_id: int, kind: str, fqdn: str, old_end, new_end) -> None:
    """A holder moving the end of the reservation a recipe runs on earlier is refused as its return is
    (domain/recipes.py refuse_shortening); later is fine."""
    recipe = _recipe_holding_by(uow, reservation_id) if kind == "recipe" else None
    if recipe is not None:
        recipe_rules.refuse_shortening(reservation_id, recipe.id, recipe.job_id, recipe.status, fqdn, old_end, new_end)


def _holder_loan(uow, reservation: Reservation) -> Loan | None:
    return uow.session.execute(select(Loan).where(
        Loan.system_id == reservation.system_id, Loan.recipient_id == reservation.user_id,
        Loan.returned_at.is_(None))).unique().scalar_one_or_none()


def close_loan(uow, loan: Loan, now: datetime, reason: str, actor: Actor | None) -> list[int]:
    """End a loan now; returns the ids of reservations returned because their holders lost access."""
    session = uow.session
    system = session.get(System, loan.system_id)
    loan.returned_at = now
    loan.return_reason = reason
    loan.warn_at = None
    activity.record(uow, actor, now, "system", system.fqdn, "loan_returned", "loan",
                    f"{loan.recipient.name} until {format_time(loan.end_at) or 'no limit'}",
                    reason)
    if actor is None or actor.id != loan.recipient_id:
        notices.loan_returned(uow, loan, system.fqdn, now, WHY.get(reason, reason))
    session.flush()
    uow.emit(SystemFreed(system.id, now))  # others' recipes may use it again
    return _return_reservations_without_access(uow, system, now, actor)


def _return_reservations_without_access(uow, system, now: datetime, actor) -> list[int]:
    access = access_of(system)  # the loan is over: no recipient any more
    open_ = uow.session.execute(select(Reservation).where(
        Reservation.system_id == system.id, Reservation.returned_at.is_(None))).unique().scalars()
    returned = []
    for reservation in list(open_):
        holder = actor_for(uow, reservation.user)
        if decide(holder, Permission.RESERVE, access):
            continue
        close_reservation(uow, reservation, now, "loan_ended", actor)
        activity.record(uow, actor, now, "reservation", reservation.id, "loan_ended", "reason", None,
                        f"{reservation.user.name} lost access to {system.fqdn} when the loan ended")
        returned.append(reservation.id)
    return returned
