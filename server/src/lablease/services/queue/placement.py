"""Applying a placement: booking systems for recipes, starting them, holding and releasing.

services/queue/scheduling.py decides; this module carries the decision out in the
caller's transaction, every booking through the calendar's atomic check.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from ...domain import recipes as rules
from ...domain.events import RecipeAborted
from ...domain.returns import RELEASED
from ...domain.windows import Window
from ...store import calendar
from ...store.queries import load_guests
from ...store.tables import Booking, Recipe, RecipeSet, Reservation, System
from ..booking.endings import close_reservation
from ..messages import notices
from ..provisioning import guests, installations
from ..records import usage

WAITING = ("queued", "assigned")


def runtime_of(recipe: Recipe) -> timedelta | None:
    limit = recipe.spec.get("runtime_limit")
    return timedelta(seconds=limit) if limit else None


def booked_time(uow, recipe: Recipe) -> timedelta | None:
    """How long a starting recipe books its system: its runtime, plus time to install when it has a distro.

    The booking is cut to the runtime itself once the installed system is running (begin_running).
    """
    runtime = runtime_of(recipe)
    if runtime is None or not recipe.spec.get("distro_requires"):
        return runtime
    return runtime + uow.settings.install_timeout


def held_by(recipe_set: RecipeSet) -> dict[int, Recipe]:
    """System -> the recipe whose reservation holds it, for a set holding systems while it waits."""
    return {r.system_id: r for r in recipe_set.recipes if r.status == "assigned"}


def _book(uow, recipe: Recipe, system: System, now: datetime, end: datetime | None, owner_id: int,
          resource_id: int) -> None:
    session = uow.session
    resource = calendar.lock_resource(uow, resource_id)
    booking = calendar.book(session, resource, Window(now, end), "recipe", owner_id, now)
    reservation = Reservation(system_id=system.id, user_id=owner_id, booking_id=booking.id, kind="recipe",
                              start_at=now, end_at=end, created_at=now)
    session.add(reservation)
    session.flush()
    recipe.system_id, recipe.reservation_id = system.id, reservation.id


def _assign(uow, recipe_set: RecipeSet, plan: dict[int, int], now: datetime, holding: bool,
            resource_of=None) -> None:
    """Give each planned recipe its system: a reservation the set already holds on it, or a new booking.

    While holding, bookings are open-ended; on start each gets the recipe's
    real end. A held system the plan no longer uses is given back.
    """
    session = uow.session
    held = {sid: recipe.reservation_id for sid, recipe in held_by(recipe_set).items()}
    owner_id = recipe_set.job.owner_id
    for recipe in recipe_set.recipes:
        # a recipe dealt the system it holds keeps it untouched (no write, however many the set holds)
        if recipe.status in WAITING and not (recipe.system_id in held and plan.get(recipe.id) == recipe.system_id):
            # queued until dealt a system again below: a recipe never holds without its reservation
            recipe.status, recipe.system_id, recipe.reservation_id = "queued", None, None
    for recipe in recipe_set.recipes:
        if recipe.id not in plan:
            continue
        system = session.get(System, plan[recipe.id])
        booked = booked_time(uow, recipe)
        end = None if holding or not booked else now + booked
        if system.id in held:
            reservation = session.get(Reservation, held.pop(system.id))
            if not holding:
                booking = session.get(Booking, reservation.booking_id)
                calendar.change_end(session, calendar.lock_resource(uow, system.resource_id), booking, end)
                reservation.end_at = end
            recipe.system_id, recipe.reservation_id = system.id, reservation.id
        else:
            _book(uow, recipe, system, now, end, owner_id,
                  resource_of(system) if resource_of else system.resource_id)
        recipe.status = "assigned" if holding else recipe.status
        usage.set_usage(uow, system, "scheduled", now)
    for recipe in recipe_set.recipes:
        if recipe.status == "assigned" and recipe.system_id is None:
            recipe.status = "queued"
    for system_id, reservation_id in held.items():  # held, but no longer part of the plan
        close_reservation(uow, session.get(Reservation, reservation_id), now, RELEASED, None)
        usage.set_usage(uow, session.get(System, system_id), "idle", now)


def start(uow, recipe_set: RecipeSet, plan: dict[int, int], now: datetime, resource_of=None) -> None:
    """Give every recipe its system and start it: running at once, or waiting for its install.

    resource_of(system): the calendar to book on, when not the system's own (an advance
    reservation's calendar for the system, for work bound to it).
    """
    session = uow.session
    _assign(uow, recipe_set, plan, now, holding=False, resource_of=resource_of)
    load_guests(session, recipe_set)
    for recipe in recipe_set.recipes:
        if recipe.id not in plan:
            continue
        system = session.get(System, recipe.system_id)
        rules.check_transition(recipe.status, "scheduled")
        recipe.status = "scheduled"
        _place_guests(uow, recipe, system, now)
        if recipe.spec.get("distro_requires"):
            recipe.status = "waiting"  # provisioning takes it from here
            usage.set_usage(uow, system, "waiting", now)
            installations.for_recipe(uow, recipe, system, now)
        else:
            begin_running(uow, recipe, now)
    refresh_rollups(uow, recipe_set, now)


def _place_guests(uow, host: Recipe, host_system: System, now: datetime) -> None:
    """A host's guest recipes start with it, in the same transaction (all or nothing): each gets a guest
    system of its own, booked for it; its installation waits until the host runs (begin_running)."""
    for guest in host.guests:
        if guest.status != "queued":
            continue
        system = guests.new_system(uow, guest, host_system, now)
        if system is None:  # (start refreshes the set afterwards)
            uow.emit(RecipeAborted(guest.id, now, "no distro tree matching its distroRequires in lab "
                                                       f"{host_system.lab or '(none)'}", refresh=False))
            continue
        _book(uow, guest, system, now, None, host.recipe_set.job.owner_id, system.resource_id)
        rules.check_transition(guest.status, "scheduled")
        guest.status = "scheduled"
        usage.set_usage(uow, system, "scheduled", now)


def begin_running(uow, recipe: Recipe, now: datetime) -> None:
    """The recipe's system is ready (handed over, or installed): its runtime limit counts from now."""
    session = uow.session
    runtime = runtime_of(recipe)
    recipe.status, recipe.started_at = "running", now
    recipe.watchdog_at = now + runtime if runtime else None
    system = session.get(System, recipe.system_id)
    usage.set_usage(uow, system, "running", now)
    if runtime is not None and recipe.spec.get("distro_requires"):
        reservation = session.get(Reservation, recipe.reservation_id)
        booking = session.get(Booking, reservation.booking_id)
        end = now + runtime
        if booking.end_at is None or end < booking.end_at:  # the install took less than it was allowed
            calendar.change_end(session, calendar.lock_resource(uow, system.resource_id), booking, end)
            reservation.end_at = end
    if recipe.watchdog_at is not None:
        uow.wake_worker()
    guests.start_installs(uow, recipe, now)


def hold(uow, recipe_set: RecipeSet, plan: dict[int, int], now: datetime) -> None:
    """The head of the queue keeps what it has found, open-ended, until it can start whole."""
    _assign(uow, recipe_set, plan, now, holding=True)
    refresh_rollups(uow, recipe_set, now)


def release(uow, recipe_set: RecipeSet, now: datetime) -> None:
    """A set that may no longer hold gives its systems back and queues again."""
    session = uow.session
    for recipe in recipe_set.recipes:
        if recipe.status == "assigned":
            reservation, system = session.get(Reservation, recipe.reservation_id), session.get(System, recipe.system_id)
            # the recipe lets go first: a reservation a recipe holds its system by cannot be returned
            recipe.status, recipe.system_id, recipe.reservation_id = "queued", None, None
            close_reservation(uow, reservation, now, RELEASED, None)
            usage.set_usage(uow, system, "idle", now)
    refresh_rollups(uow, recipe_set, now)


def refresh_rollups(uow, recipe_set: RecipeSet, now: datetime) -> None:
    recipes = load_guests(uow.session, recipe_set).every_recipe()  # a guest's result counts as its host's does
    recipe_set.status = rules.rollup_status(r.status for r in recipes)
    recipe_set.result = rules.worst_result(r.result for r in recipes)
    job = recipe_set.job
    job.status = rules.rollup_status(rs.status for rs in job.recipe_sets)
    job.result = rules.worst_result(rs.result for rs in job.recipe_sets)
    if job.status in rules.FINISHED and job.finished_at is None:
        job.finished_at = now
        notices.job_finished(uow, job, now)
