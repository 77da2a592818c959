"""Event-driven scheduling: place recipe sets when they arrive and when a system frees up.

Events are emitted inside a transaction and handled before it commits
(UnitOfWork.dispatch), so a freed system is offered at once:
- ("recipe_set_new", (set id, now)): try to start the set on free systems;
- ("system_freed", (system id, now)): offer the system to the set holding
  part of its systems, then to queued sets by priority then age — found
  through the recipe_candidates index, never by scanning the queue;
- ("system_changed", (system id, now)): its requirements or access may have
  changed: recompute which queued recipes it suits, then offer it.
Only the highest-priority, oldest blocked multi-host set may hold systems
while it waits (no starvation); every other set starts whole or not at all
(no ABBA deadlock).
"""
from __future__ import annotations

from datetime import datetime, timedelta

import random

from sqlalchemy import and_, delete, exists, func, or_, select

from ..domain import recipes as rules
from ..domain.permissions import decide_schedule
from ..domain.windows import Window
from ..scheduler.filters import Host
from ..scheduler.planner import Need, candidates, place, place_partial, preference_order
from ..store import calendar
from ..store.tables import (Booking, Recipe, RecipeCandidate, RecipeSet, Reservation, System)
from ..store.uow import emit
from . import systems as system_service
from . import usage
from .endings import close_reservation
from .users import actor_for

WAITING = ("queued", "assigned")


def host(system: System) -> Host:
    return Host(system.id, system.fqdn, system.arch, system.memory_mb, system.cpus, system.lab,
                system.attributes or {}, frozenset(p.name for p in system.pools))


def _static_access(system: System):
    """Access as far as it does not change from minute to minute: no loan, condition aside."""
    access = system_service.access_of(system)
    return access.__class__(access.owner_id, "automated", access.rules)


def usable_by(owner):
    def usable(h: Host, systems: dict) -> tuple[bool, str | None]:
        decision = decide_schedule(owner, _static_access(systems[h.id]))
        return decision.allowed, None if decision.allowed else decision.reason
    return usable


def compute_candidates(session, recipe: Recipe, systems: list[System], only: System | None = None) -> None:
    """Store which systems the recipe could ever run on, ranked by its autopick preferences."""
    owner = actor_for(session, recipe.recipe_set.job.owner)
    by_id = {s.id: s for s in systems}
    spec = recipe.spec
    check = usable_by(owner)
    found = candidates(spec.get("host_requires"), [host(s) for s in systems], lambda h: check(h, by_id),
                       spec.get("force"))
    autopick = spec.get("autopick") or {}
    order = preference_order(found, autopick.get("pools", []), False)
    ranks = _ranks(found, autopick.get("pools", []))
    query = delete(RecipeCandidate).where(RecipeCandidate.recipe_id == recipe.id)
    if only is not None:
        query = query.where(RecipeCandidate.system_id == only.id)
    session.execute(query)
    session.add_all(RecipeCandidate(recipe_id=recipe.id, system_id=sid, rank=ranks[sid]) for sid in order)


def _ranks(found: list[Host], pools: list[str]) -> dict[int, int]:
    return {h.id: next((i for i, p in enumerate(pools) if p in h.pools), len(pools)) for h in found}


def schedulable_systems(session) -> list[System]:
    return list(session.execute(select(System).where(System.condition != "removed")).unique().scalars())


# --- the calendar, as the planner sees it -------------------------------------------------

def _runtime(recipe: Recipe) -> timedelta | None:
    limit = recipe.spec.get("runtime_limit")
    return timedelta(seconds=limit) if limit else None


def _booked(window: Window):
    """A booking of the system's resource overlapping window (correlated with System)."""
    conditions = [Booking.resource_id == System.resource_id, or_(Booking.end_at.is_(None), Booking.end_at > window.start)]
    if window.end is not None:
        conditions.append(Booking.start_at < window.end)
    return exists().where(and_(*conditions))


def free_candidates(session, recipe: Recipe, now: datetime, only: int | None = None) -> list[int]:
    """The recipe's candidates that are Automated and free for its whole runtime, best first.

    Without a runtime limit a system with any later booking is not free: the
    recipe might never end. With one, a later booking is fine if the recipe
    ends before it (backfill).
    """
    runtime = _runtime(recipe)
    window = Window(now, now + runtime if runtime else None)
    query = (select(RecipeCandidate.system_id, RecipeCandidate.rank)
             .join(System, System.id == RecipeCandidate.system_id)
             .where(RecipeCandidate.recipe_id == recipe.id, System.condition == "automated", ~_booked(window))
             .order_by(RecipeCandidate.rank, System.fqdn))
    if only is not None:
        query = query.where(RecipeCandidate.system_id == only)
    rows = session.execute(query).all()
    if (recipe.spec.get("autopick") or {}).get("random"):
        return _shuffled_tiers(rows)
    return [system_id for system_id, _ in rows]


def _shuffled_tiers(rows) -> list[int]:
    tiers: dict[int, list[int]] = {}
    for system_id, rank in rows:
        tiers.setdefault(rank, []).append(system_id)
    ordered = []
    for rank in sorted(tiers):
        random.shuffle(tiers[rank])
        ordered += tiers[rank]
    return ordered


def loan_check(session, owner):
    """is_free for the planner: the calendar was checked in SQL; loans are checked here."""
    def is_free(system_id: int, runtime: timedelta | None) -> bool:
        system = session.get(System, system_id)
        access = system_service.access_of(system, system_service.active_loan(session, system))
        return bool(decide_schedule(owner, access))
    return is_free


def _needs(session, recipe_set: RecipeSet, now: datetime, only: int | None = None) -> list[Need]:
    needs = []
    single = len(recipe_set.recipes) == 1
    for recipe in recipe_set.recipes:
        if recipe.status not in WAITING:
            continue
        held = recipe.system_id if recipe.status == "assigned" else None
        ordered = [] if held else free_candidates(session, recipe, now, only if single else None)
        needs.append(Need(recipe.id, tuple(ordered), _runtime(recipe), held))
    return needs


# --- applying a plan ----------------------------------------------------------------------

def _book(session, recipe: Recipe, system: System, now: datetime, end: datetime | None, owner_id: int) -> None:
    resource = calendar.lock_resource(session, system.resource_id)
    booking = calendar.book(session, resource, Window(now, end), "recipe", owner_id, now)
    reservation = Reservation(system_id=system.id, user_id=owner_id, booking_id=booking.id, kind="recipe",
                              start_at=now, end_at=end, created_at=now)
    session.add(reservation)
    session.flush()
    recipe.system_id, recipe.reservation_id = system.id, reservation.id


def start(session, recipe_set: RecipeSet, plan: dict[int, int], now: datetime) -> None:
    """Give every recipe its system and start it: running at once, or waiting for its install."""
    owner_id = recipe_set.job.owner_id
    for recipe in recipe_set.recipes:
        if recipe.id not in plan:
            continue
        system = session.get(System, plan[recipe.id])
        runtime = _runtime(recipe)
        end = now + runtime if runtime else None
        if recipe.status == "assigned":  # held open-ended while waiting: now it has its real end
            reservation = session.get(Reservation, recipe.reservation_id)
            booking = session.get(Booking, reservation.booking_id)
            calendar.change_end(session, calendar.lock_resource(session, system.resource_id), booking, end)
            reservation.start_at = booking.start_at
            reservation.end_at = end
        else:
            _book(session, recipe, system, now, end, owner_id)
        rules.check_transition(recipe.status, "scheduled")
        recipe.status = "scheduled"
        usage.set_usage(session, system, "scheduled", now)
        if recipe.spec.get("distro_requires"):
            recipe.status = "waiting"  # provisioning takes it from here
            usage.set_usage(session, system, "waiting", now)
        else:
            recipe.status, recipe.started_at = "running", now
            recipe.watchdog_at = end
            usage.set_usage(session, system, "running", now)
    refresh_rollups(session, recipe_set, now)


def hold(session, recipe_set: RecipeSet, plan: dict[int, int], now: datetime) -> None:
    """The head of the queue keeps what it has found, open-ended, until it can start whole."""
    for recipe in recipe_set.recipes:
        if recipe.id in plan and recipe.status == "queued":
            system = session.get(System, plan[recipe.id])
            _book(session, recipe, system, now, None, recipe_set.job.owner_id)
            recipe.status = "assigned"
            usage.set_usage(session, system, "scheduled", now)
    refresh_rollups(session, recipe_set, now)


def release(session, recipe_set: RecipeSet, now: datetime) -> None:
    """A set that may no longer hold gives its systems back and queues again."""
    for recipe in recipe_set.recipes:
        if recipe.status == "assigned":
            reservation = session.get(Reservation, recipe.reservation_id)
            close_reservation(session, reservation, now, "released", None)
            usage.set_usage(session, session.get(System, recipe.system_id), "idle", now)
            recipe.status, recipe.system_id, recipe.reservation_id = "queued", None, None
    refresh_rollups(session, recipe_set, now)


def refresh_rollups(session, recipe_set: RecipeSet, now: datetime) -> None:
    states = [r.status for r in recipe_set.recipes]
    recipe_set.status = rules.rollup_status(states)
    recipe_set.result = rules.worst_result(r.result for r in recipe_set.recipes)
    job = recipe_set.job
    job.status = rules.rollup_status(rs.status for rs in job.recipe_sets)
    job.result = rules.worst_result(rs.result for rs in job.recipe_sets)
    if job.status in rules.FINISHED and job.finished_at is None:
        job.finished_at = now


# --- the events ---------------------------------------------------------------------------

def try_start(session, recipe_set: RecipeSet, now: datetime, freed: int | None = None) -> bool:
    """Start the set if every recipe gets a free system. `freed`: only that system is new."""
    owner = actor_for(session, recipe_set.job.owner)
    plan = place(_needs(session, recipe_set, now, freed), loan_check(session, owner))
    if plan is None:
        return False
    start(session, recipe_set, plan, now)
    return True


def _multi_host():
    return select(func.count(Recipe.id)).where(Recipe.recipe_set_id == RecipeSet.id).scalar_subquery() > 1


def queue_order(query):
    return query.order_by(RecipeSet.priority.desc(), RecipeSet.queued_at, RecipeSet.id)


def head(session) -> RecipeSet | None:
    """The one set allowed to hold systems: the first blocked multi-host set of the queue."""
    query = queue_order(select(RecipeSet).where(RecipeSet.status.in_(WAITING), _multi_host())).limit(1)
    return session.execute(query).unique().scalar_one_or_none()


def settle_holding(session, now: datetime) -> None:
    """Only the head holds: others give back; the head takes whatever free systems it can use."""
    first = head(session)
    holders = session.execute(select(RecipeSet).where(RecipeSet.status == "assigned")).unique().scalars()
    for holder in list(holders):
        if first is None or holder.id != first.id:
            release(session, holder, now)
    if first is not None:
        _hold_what_is_free(session, first, now)


def _hold_what_is_free(session, recipe_set: RecipeSet, now: datetime) -> None:
    owner = actor_for(session, recipe_set.job.owner)
    partial = place_partial(_needs(session, recipe_set, now), loan_check(session, owner))
    if partial:
        hold(session, recipe_set, partial, now)


def on_new_set(uow, set_id: int, now: datetime) -> None:
    session = uow.session
    recipe_set = session.get(RecipeSet, set_id)
    if recipe_set is None or recipe_set.status not in WAITING:
        return
    if not try_start(session, recipe_set, now):
        settle_holding(session, now)


def on_system_freed(uow, system_id: int, now: datetime) -> None:
    """Offer a freed system: to the holding set first, then to waiting sets by priority then age.

    The head of the queue (first blocked multi-host set) that cannot start yet
    holds the system rather than let younger work take it: that is what keeps
    large sets from starving.
    """
    session = uow.session
    system = session.get(System, system_id)
    if system is None or system.condition != "automated":
        return
    first = head(session)
    tried: set[int] = set()
    while _free_now(session, system, now):
        page = list(session.execute(_interested(system_id, tried)).scalars())
        if not page:
            break
        for set_id in page:
            tried.add(set_id)
            if not _free_now(session, system, now):
                break
            recipe_set = session.get(RecipeSet, set_id)
            if not try_start(session, recipe_set, now, freed=system_id) and first is not None and set_id == first.id:
                _hold_what_is_free(session, recipe_set, now)
    settle_holding(session, now)


def _interested(system_id: int, tried: set[int], page: int = 50):
    """Ids of waiting sets with a waiting recipe that could use the system: holder first, then
    by priority and age. Found through the candidate index; read a page at a time."""
    query = select(RecipeSet.id).where(RecipeSet.status.in_(WAITING), exists().where(
        RecipeCandidate.system_id == system_id, RecipeCandidate.recipe_id == Recipe.id,
        Recipe.recipe_set_id == RecipeSet.id, Recipe.status.in_(WAITING)))
    if tried:
        query = query.where(RecipeSet.id.notin_(tried))
    return query.order_by((RecipeSet.status == "assigned").desc(), RecipeSet.priority.desc(),
                          RecipeSet.queued_at, RecipeSet.id).limit(page)


def _free_now(session, system: System, now: datetime) -> bool:
    latest = calendar.latest_before(session, system.resource_id, now + timedelta(microseconds=1))
    return latest is None or (latest.end_at is not None and latest.end_at <= now)


def on_system_changed(uow, system_id: int, now: datetime) -> None:
    """Requirements, pools or access changed: which waiting recipes suit the system now?"""
    session = uow.session
    system = session.get(System, system_id)
    if system is None:
        return
    waiting = session.execute(select(Recipe).where(Recipe.status.in_(WAITING))).unique().scalars()
    for recipe in waiting:
        compute_candidates(session, recipe, [system], only=system)
    session.flush()
    on_system_freed(uow, system_id, now)


HANDLERS = {"recipe_set_new": on_new_set, "system_freed": on_system_freed, "system_changed": on_system_changed}


def handle(uow, name: str, payload) -> None:
    handler = HANDLERS.get(name)
    if handler is not None:
        handler(uow, *payload)


def system_freed(session, system_id: int, now: datetime) -> None:
    emit(session, "system_freed", (system_id, now))


def system_changed(session, system_id: int, now: datetime) -> None:
    emit(session, "system_changed", (system_id, now))


