"""Work inside an advance reservation: recipe sets bound to it, and its users' reservations.

Both book on the AR's own calendar for each system it holds, so they never
overlap each other while the AR's booking on the system stays one block.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import select

from ...domain import advance as rules
from ...domain.errors import Conflict, Forbidden, Invalid
from ...domain.permissions import Actor
from ...domain.times import format_time
from ...domain.windows import Window
from ...scheduler.filters import is_live, possible, verdict
from ...scheduler.planner import Need, place
from ...store import calendar
from ...store.advance_tables import AdvanceReservation, ArSystem
from ...store.queries import host
from ...store.tables import RecipeSet, Resource, System
from ..queue.placement import runtime_of, start
from ..queue.scheduling import live_hosts
from .advance import USABLE_CONDITIONS, in_acl, may_see


def usable_systems(ar: AdvanceReservation) -> list[ArSystem]:
    """Where bound work may run now: nothing outside r/E, nothing at all in a hard error."""
    if ar.state == "r" or (ar.state == "E" and ar.error_handling == "soft"):
        return [held for held in ar.systems if held.system.condition in USABLE_CONDITIONS
                and (held.system.lab or None) == (held.lab or None)]
    return []


def place_bound(uow, ar: AdvanceReservation, now: datetime) -> None:
    """Start the AR's queued recipe sets, by priority then age, each all or nothing on the AR's systems."""
    session = uow.session
    held = usable_systems(ar) if ar.start_at <= now < ar.end_at else []
    if not held:
        return
    by_system = {h.system_id: h for h in held}
    latest_end = ar.end_at - uow.settings.ar_duration_offset
    sets = session.execute(select(RecipeSet).where(RecipeSet.ar_id == ar.id, RecipeSet.status == "queued")
                           .order_by(RecipeSet.priority.desc(), RecipeSet.queued_at, RecipeSet.id)).unique().scalars()
    for recipe_set in list(sets):
        needs = [Need(r.id, tuple(sid for sid, h in by_system.items() if _suits_now(uow, r.spec, h.system, now)),
                      runtime_of(r))
                 for r in recipe_set.recipes if r.status == "queued"]

        def is_free(system_id: int, runtime) -> bool:
            if runtime is None or now + runtime > latest_end:  # it could no longer end in time
                return False
            window = Window(now, now + runtime)
            return not calendar.touching(session, by_system[system_id].slot_resource_id, window)

        plan = place(needs, is_free)
        if plan is not None:
            start(uow, recipe_set, plan, now,
                  resource_of=lambda system: by_system[system.id].slot_resource_id)


def check_bound_set(uow, actor: Actor, ar_id: int, recipes: list[dict], offset: timedelta, now: datetime,
                    where: str) -> None:
    """Submit-time checks of a recipe set bound to an AR (recipes in the job's JSON form)."""

    ar = uow.session.get(AdvanceReservation, ar_id)
    if ar is None or ar.state in rules.FINAL:
        raise Invalid(where, f"no advance reservation {ar_id} (or it has ended)")
    if not (actor.is_admin or ar.owner_id == actor.id or in_acl(uow, actor, ar)):
        raise Forbidden(f"you are not in the ACL of advance reservation {ar_id}")
    if len(recipes) > len(ar.systems):
        raise Invalid(where, f"{len(recipes)} recipes, but advance reservation {ar_id} holds {len(ar.systems)} systems")
    for index, recipe in enumerate(recipes):
        limit = recipe.get("runtime_limit")
        problem = rules.bound_runtime_problem(now, ar.start_at, ar.end_at, offset,
                                              timedelta(seconds=limit) if limit else None)
        if problem:
            raise Invalid(f"{where}.recipes[{index}].runtime_limit", problem)
        if not any(_suits(recipe, h.system) for h in ar.systems):
            raise Invalid(f"{where}.recipes[{index}].host_requires",
                          f"no system of advance reservation {ar_id} matches")


def slot_for_reservation(uow, actor: Actor, ar_id: int, system: System, start: datetime,
                         end: datetime | None) -> tuple[AdvanceReservation, Resource]:
    """An ACL user's reservation inside the AR: where it books (the AR's calendar for the system)."""
    ar = uow.session.get(AdvanceReservation, ar_id)
    if ar is None or ar.state in rules.FINAL:
        raise Invalid("advance_reservation", f"no active advance reservation {ar_id}")
    if not may_see(uow, actor, ar):  # the owner, its ACL and admins
        raise Forbidden(f"you are not in the ACL of advance reservation {ar_id}")
    held = next((h for h in ar.systems if h.system_id == system.id), None)
    if held is None:
        raise Invalid("system", f"advance reservation {ar_id} does not hold {system.fqdn}")
    if ar.state == "E" and ar.error_handling == "hard":
        raise Conflict(f"advance reservation {ar_id} is in error with hard error handling: nothing runs in it")
    if start < ar.start_at or end is None or end > ar.end_at:
        raise Invalid("end", f"a reservation inside advance reservation {ar_id} must fit its window "
                             f"{format_time(ar.start_at)} .. {format_time(ar.end_at)}")
    return ar, calendar.lock_resource(uow, held.slot_resource_id)


def check_end_inside(uow, ar_id: int, end: datetime, field: str) -> None:
    """A reservation inside an AR never outlasts it: say so, rather than the AR's booking being in the way."""
    ar = uow.session.get(AdvanceReservation, ar_id)
    if ar is not None and end > ar.end_at:
        raise Invalid(field, f"advance reservation {ar_id} ends at {format_time(ar.end_at)}; "
                             "a reservation inside it cannot go past that")


def window_end(uow, ar_id: int) -> datetime | None:
    ar = uow.session.get(AdvanceReservation, ar_id)
    return ar.end_at if ar is not None else None


def _suits(recipe: dict, system) -> bool:
    """Whether the recipe's host requirements may accept the system (its live leaves, <user> and <loaned>,
    are judged when it is placed: _suits_now)."""
    tree = recipe.get("host_requires")
    return possible(tree, host(system, tree))


def _suits_now(uow, recipe: dict, system, now: datetime) -> bool:
    """Whether the recipe's host requirements accept the system, with who holds it and is lent it now."""
    tree = recipe.get("host_requires")
    judged = host(system, tree)
    return verdict(tree, live_hosts(uow, [judged], now)[0] if is_live(tree) else judged)[0]
