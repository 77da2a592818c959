"""Event-driven scheduling: place recipe sets when they arrive and when a system frees up.

Events (domain/events.py) are emitted inside a transaction and handled before it
commits (UnitOfWork.dispatch, through services/handlers.py), so a freed system
is offered at once:
- RecipeSetQueued: try to start the sets on free systems (on_new_sets);
- SystemFreed: offer the system to the set holding part of its systems, then
  to queued sets by priority then age — found through the recipe_candidates
  index, never by scanning the queue (on_system_freed);
- SystemChanged: its requirements or access may have changed: recompute which
  queued recipes it suits, then offer it (on_system_changed).
Only the highest-priority, oldest blocked multi-host set may hold systems
while it waits (no starvation); every other set starts whole or not at all
(no ABBA deadlock).
"""
from __future__ import annotations

from datetime import datetime, timedelta

import hashlib
import heapq
import json
import random

from sqlalchemy import and_, delete, func, or_, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import undefer_group

from ...domain.permissions import Permission, decide, decide_schedule
from ...domain.recipes import never_starts
from dataclasses import replace

from ...scheduler.filters import Host, is_live, needs_hardware, verdict
from ...scheduler.planner import (Need, candidates, offer_order, place, place_partial, queue_key, run_window,
                                  shuffled_within_tiers, tier)
from ...store import calendar
from ...store.queries import host
from ...store.tables import ClassCandidate, Recipe, RecipeSet, RequirementClass, System, User
from ..catalog import health_state
from ..catalog import systems as system_service
from ..people.users import actor_for
from . import waitline
from .placement import WAITING, held_by, hold, release, runtime_of, start

# autopick random="true": each process its own generator, seeded by the system (the order need not repeat).
AUTOPICK_RANDOM = random.Random()


def _static_access(system: System):
    """Access as far as it does not change from minute to minute: no loan, condition aside."""
    access = system_service.access_of(system)
    return access.__class__(access.owner_id, "automated", access.rules)


def usable_by(owner):
    def usable(h: Host, systems: dict) -> tuple[bool, str | None]:
        decision = decide_schedule(owner, _static_access(systems[h.id]))
        return decision.allowed, None if decision.allowed else decision.reason
    return usable


def reservable_by(owner):
    """A waiting reservation's candidates: systems its owner may reserve, condition and loans aside (both are
    checked when one is offered: services/queue/waitline.py try_grant)."""
    def usable(h: Host, systems: dict) -> tuple[bool, str | None]:
        access = system_service.access_of(systems[h.id])
        decision = decide(owner, Permission.RESERVE, access.__class__(access.owner_id, "manual", access.rules))
        return decision.allowed, None if decision.allowed else decision.reason
    return usable


def class_key(owner_id: int, spec: dict) -> str:
    """Recipes with the same owner, requirements and autopick pools can run on the same systems."""
    wanted = {"owner": owner_id, "host": spec.get("host_requires"), "force": spec.get("force"),
              "pools": (spec.get("autopick") or {}).get("pools", [])}
    if spec.get("reserve"):  # a waiting reservation: the systems its owner may reserve, not be given
        wanted["reserve"] = True
    return hashlib.sha256(json.dumps(wanted, sort_keys=True).encode()).hexdigest()


def requirement_class(uow, owner_id: int, spec: dict, now: datetime) -> RequirementClass:
    """The recipe's class, created (with its candidate systems) the first time it is seen."""
    session = uow.session
    key = class_key(owner_id, spec)
    found = session.execute(select(RequirementClass).where(RequirementClass.key == key)).scalar_one_or_none()
    if found is not None:
        return found
    cls = RequirementClass(key=key, owner_id=owner_id, created_at=now, spec={
        "host_requires": spec.get("host_requires"), "force": spec.get("force"),
        "pools": (spec.get("autopick") or {}).get("pools", []), **({"reserve": True} if spec.get("reserve") else {})})
    try:
        with session.begin_nested():  # a savepoint: a lost race leaves the rest of the transaction alone
            session.add(cls)
    except IntegrityError:  # a concurrent request created it first (PostgreSQL; SQLite's write lock serialises)
        return session.execute(select(RequirementClass).where(RequirementClass.key == key)).scalar_one()
    compute_candidates(uow, cls, schedulable_systems(uow, needs_hardware(cls.spec.get("host_requires"))))
    return cls


def requirement_classes(uow, owner_id: int, specs: list[dict], now: datetime) -> list[RequirementClass]:
    """Each spec's class (as `requirement_class`), those that exist found in one query: a job's recipes
    mostly share a few classes, so a big job costs no lookup per recipe."""
    keys = [class_key(owner_id, spec) for spec in specs]
    found = {cls.key: cls for cls in uow.session.execute(select(RequirementClass).where(
        RequirementClass.key.in_(set(keys)))).scalars()} if keys else {}
    for key, spec in zip(keys, specs):
        if key not in found:
            found[key] = requirement_class(uow, owner_id, spec, now)
    return [found[key] for key in keys]


def compute_candidates(uow, cls: RequirementClass, systems: list[System], only: System | None = None) -> None:
    """Store which systems the class could ever run on, ranked by its autopick preferences."""
    session = uow.session
    owner = actor_for(uow, session.get(User, cls.owner_id))
    by_id = {s.id: s for s in systems}
    check = (reservable_by if cls.spec.get("reserve") else usable_by)(owner)
    tree = cls.spec.get("host_requires")
    found = candidates(tree, [host(s, tree) for s in systems], lambda h: check(h, by_id),
                       cls.spec.get("force"))
    pools = cls.spec.get("pools", [])
    ranks = {h.id: tier(h, pools) for h in found}
    query = delete(ClassCandidate).where(ClassCandidate.class_id == cls.id)
    if only is not None:
        query = query.where(ClassCandidate.system_id == only.id)
    session.execute(query)
    session.add_all(ClassCandidate(class_id=cls.id, system_id=h.id, rank=ranks[h.id]) for h in found)


def schedulable_systems(uow, hardware: bool = False) -> list[System]:
    """Systems the scheduler may give out: not removed, and no guest recipe's virtual machine; with
    `hardware`, their disks and devices in the same query."""
    query = select(System).where(System.condition != "removed", System.guest.is_(False))
    if hardware:
        query = query.options(undefer_group("hardware"))
    return list(uow.session.execute(query).unique().scalars())


# --- the calendar, as the planner sees it -------------------------------------------------

def free_candidates(uow, recipe: Recipe, now: datetime, only: int | None = None,
                    memo: dict | None = None) -> list[int]:
    """The recipe's candidates that are Automated and free for its whole runtime, best first.

    Without a runtime limit a system with any later booking is not free: the
    recipe might never end. With one, a later booking is fine if the recipe
    ends before it (backfill). `memo`: rows already read for a recipe of the
    same class and runtime (the recipes of one set often ask alike).
    """
    session = uow.session
    window = run_window(now, runtime_of(recipe))
    key = (recipe.class_id, window, only)
    rows = memo.get(key) if memo is not None else None
    if rows is None:
        query = (select(ClassCandidate.system_id, ClassCandidate.rank)
                 .join(System, System.id == ClassCandidate.system_id)
                 .where(ClassCandidate.class_id == recipe.class_id, System.condition == "automated",
                        ~calendar.booked_during(window, System.resource_id, session.get_bind().dialect.name))
                 .order_by(ClassCandidate.rank, System.fqdn))
        if only is not None:
            query = query.where(ClassCandidate.system_id == only)
        rows = session.execute(query).all()
        if memo is not None:
            memo[key] = rows
    if (recipe.spec.get("autopick") or {}).get("random"):
        return shuffled_within_tiers(rows, AUTOPICK_RANDOM)
    return [system_id for system_id, _ in rows]


def live_hosts(uow, hosts: list[Host], now: datetime) -> list[Host]:
    """The hosts with their live fields (scheduler/filters.py LIVE_FIELDS): the holder of the reservation in
    force now and the recipient of the active loan, read in two queries."""
    ids = [h.id for h in hosts]
    holding = system_service.current_reservations(uow, ids, now)
    loans = system_service.active_loans(uow, ids)
    return [replace(h, user=holding[h.id].user.name if h.id in holding else None,
                    loaned=loans[h.id].recipient.name if h.id in loans else None) for h in hosts]


def _live_suited(uow, recipe: Recipe, ordered: list[int], now: datetime) -> list[int]:
    """The candidates whose holder and loan now satisfy the recipe's live leaves (only a recipe that has
    some pays for this check: the candidate list left them unknown)."""
    tree = recipe.spec.get("host_requires")
    if not ordered or not is_live(tree):
        return ordered
    hosts = live_hosts(uow, [host(uow.session.get(System, sid), tree) for sid in ordered], now)
    return [h.id for h in hosts if verdict(tree, h)[0]]


def loan_check(uow, owner, needs: list[Need]):
    """is_free for the planner: the calendar was checked in SQL; loans are checked here, the loans and
    systems of every candidate read at once (not one query per candidate)."""
    session = uow.session
    ids = sorted({sid for need in needs for sid in need.candidates})
    missing = [sid for sid in ids if session.identity_key(System, sid) not in session.identity_map]
    loans: dict = {}
    for start_at in range(0, len(ids), _CHUNK):
        chunk = ids[start_at:start_at + _CHUNK]
        loans.update(system_service.active_loans(uow, chunk))
        wanted = [sid for sid in missing if chunk[0] <= sid <= chunk[-1]]
        if wanted:
            session.execute(select(System).where(System.id.in_(wanted))).unique().scalars().all()

    def is_free(system_id: int, runtime: timedelta | None) -> bool:
        system = session.get(System, system_id)
        return bool(decide_schedule(owner, system_service.access_of(system, loans.get(system_id))))
    return is_free


_CHUNK = 1000  # ids per IN list (SQLite limits a statement's parameters)


def _needs(uow, recipe_set: RecipeSet, now: datetime, only: int | None = None, head: bool = False,
           memo: dict | None = None) -> list[Need]:
    """What each waiting recipe could take now: free candidates, and the systems its set holds.

    Held systems belong to the set, not to one recipe: each placement may deal
    them out again, so an early hold never blocks the set's own start.

    `only`: the one system freed since the set was last tried. A one-recipe set
    not holding anything needs only that one. So does the head (`head`) once it
    holds systems: it took every free system it could use when it became the
    head (settle_holding) and has been offered every system freed since,
    first, so what it holds is a largest matching of what was free; one freed
    system can only extend it through that system (an augmenting path ends at
    an unmatched system, and any other free one was unmatched before too), and
    the candidate scans of its classes are saved at every event. A head
    holding nothing may have just become the head (its candidates changed, a
    set before it went): it looks at every free candidate.

    `memo`: free candidates already read, by class and run window (free_candidates), while nothing was booked
    or freed since (on_new_sets shares one between the sets of a job).
    """
    needs = []
    held = list(held_by(recipe_set))
    single = len(recipe_set.recipes) == 1
    narrow = only if (head and held) or (single and not held) else None
    waiting = [recipe for recipe in recipe_set.recipes if recipe.status in WAITING]
    usable: dict[int, set[int]] = {}  # class -> the held systems it can use, for every class in one query
    if held:
        for class_id, system_id in uow.session.execute(select(ClassCandidate.class_id, ClassCandidate.system_id).where(
                ClassCandidate.class_id.in_({r.class_id for r in waiting}), ClassCandidate.system_id.in_(held))):
            usable.setdefault(class_id, set()).add(system_id)
    memo = {} if memo is None else memo
    for recipe in waiting:
        # the systems the set holds passed this check when it took them (their holder is now the set)
        ordered = _live_suited(uow, recipe, free_candidates(uow, recipe, now, narrow, memo), now)
        ordered = health_state.gate(uow, recipe, ordered, now)  # healthy_within: a recent pass, or a check first
        if held:
            ordered = [sid for sid in held if sid in usable.get(recipe.class_id, ())] + ordered
        needs.append(Need(recipe.id, tuple(ordered), runtime_of(recipe)))
    return needs


# --- the events ---------------------------------------------------------------------------

def try_start(uow, recipe_set: RecipeSet, now: datetime, freed: int | None = None, head: bool = False,
              memo: dict | None = None) -> bool:
    """Start the set if every recipe gets a free system. `freed`: only that system is new (`head`: the set is
    the head of the queue, see _needs); the head that cannot start holds what it can use of the same needs
    (read once for both)."""
    needs, is_free = _plan(uow, recipe_set, now, freed, head, memo)
    plan = place(needs, is_free)
    if plan is not None:
        start(uow, recipe_set, plan, now)
        return True
    if head:
        _hold(uow, recipe_set, needs, is_free, now)
    return False


def _plan(uow, recipe_set: RecipeSet, now: datetime, freed: int | None, head: bool, memo: dict | None = None):
    """What the set's recipes could take now, and the planner's free check for it."""
    needs = _needs(uow, recipe_set, now, freed, head, memo)
    return needs, loan_check(uow, actor_for(uow, recipe_set.job.owner), needs)


def _hold(uow, recipe_set: RecipeSet, needs: list[Need], is_free, now: datetime) -> None:
    """The head holds what it can use, from what it holds (kept: dealing it out again could swap a held
    system for the freed one, give the held one back and offer it again, for nothing)."""
    session = uow.session
    current = {r.id: r.system_id for r in recipe_set.recipes if r.status == "assigned"}
    kept = set(current.values())

    def holdable(system_id: int, runtime: timedelta | None) -> bool:
        """A hold books the system open-ended (placement.hold): only a system with nothing booked from now
        on can be held (one free now but booked later fits a short run, never an open-ended hold)."""
        if system_id in kept:
            return is_free(system_id, runtime)
        system = session.get(System, system_id)
        return is_free(system_id, runtime) and not calendar.touching(session, system.resource_id, run_window(now, None))
    partial = place_partial(needs, holdable, current)
    if partial:
        hold(uow, recipe_set, partial, now)


def queue_order(query):
    return query.order_by(RecipeSet.priority.desc(), RecipeSet.queued_at, RecipeSet.id)


def head(uow) -> RecipeSet | None:
    """The one set allowed to hold systems: the first blocked multi-host set of the queue
    that could ever start whole (one that never can must not hold systems from others)."""
    for *_, set_id in heapq.merge(*(_multi_queue(uow, status) for status in WAITING)):
        recipe_set = uow.session.get(RecipeSet, set_id)
        if could_ever_start(uow, recipe_set):
            return recipe_set
    return None


def _multi_queue(uow, status: str, page: int = 20):
    """The waiting multi-host sets of one status in scheduling order, a page at a time, walking
    ix_recipe_sets_head (one status at a time: an IN would make the database sort them all)."""
    query = queue_order(select(RecipeSet.priority, RecipeSet.queued_at, RecipeSet.id).where(
        RecipeSet.multi.is_(True), RecipeSet.status == status, RecipeSet.ar_id.is_(None)))  # bound: wait for their AR
    offset = 0
    while rows := uow.session.execute(query.offset(offset).limit(page)).all():
        for priority, queued_at, set_id in rows:
            yield (*queue_key(priority, queued_at, set_id), set_id)
        offset += len(rows)


def could_ever_start(uow, recipe_set: RecipeSet) -> bool:
    """Do the recipes' candidate systems allow a distinct system each, were all of them free?

    Only the candidates the scheduler may give out count: Automated ones (not Manual, broken or removed;
    a candidate is already one whose policy lets the owner have it, and never a guest's VM). A loan to
    someone else ends one day, so a lent system counts. When every recipe has at least as many candidates
    as there are recipes, a distinct system each always exists (Hall's condition), so counting suffices;
    only otherwise is the matching tried.
    """
    session = uow.session
    waiting = [r for r in recipe_set.recipes if r.status in WAITING]
    given = (ClassCandidate.class_id.in_({r.class_id for r in waiting}), System.condition == "automated")
    counts = dict(session.execute(select(ClassCandidate.class_id, func.count())
                                  .join(System, System.id == ClassCandidate.system_id).where(*given)
                                  .group_by(ClassCandidate.class_id)).all())
    if all(counts.get(r.class_id, 0) >= len(waiting) for r in waiting):
        return True
    by_class: dict[int, list[int]] = {}
    rows = select(ClassCandidate.class_id, ClassCandidate.system_id).join(System, System.id == ClassCandidate.system_id)
    for class_id, system_id in session.execute(rows.where(*given)).all():
        by_class.setdefault(class_id, []).append(system_id)
    needs = [Need(recipe.id, tuple(by_class.get(recipe.class_id, ()))) for recipe in waiting]
    return place(needs, lambda system, runtime: True) is not None


def refuse_never_starting(uow, recipe_set: RecipeSet, position: int) -> None:
    """A set that could not start even with every system free is refused when submitted (409), as a
    reservation nobody could ever grant is: queued, it would wait for ever (docs/scheduler.md)."""
    if recipe_set.ar_id is not None or could_ever_start(uow, recipe_set):
        return  # an advance reservation's work is checked against the AR's systems (advance_work)
    class_ids = {r.class_id for r in recipe_set.recipes}
    usable = uow.session.execute(select(System.fqdn).join(ClassCandidate, ClassCandidate.system_id == System.id)
                             .where(ClassCandidate.class_id.in_(class_ids), System.condition == "automated")
                             .distinct().order_by(System.fqdn)).scalars().all()
    raise never_starts(position, len(recipe_set.recipes), list(usable))


def holders(uow) -> list[RecipeSet]:
    """Sets holding systems while they wait (a set's own status may still say queued)."""
    session = uow.session
    ids = session.execute(select(Recipe.recipe_set_id).where(Recipe.status == "assigned").distinct()).scalars()
    return [session.get(RecipeSet, set_id) for set_id in list(ids)]


def settle_holding(uow, now: datetime, previous_head: int | None = -1, known: RecipeSet | None = None) -> None:
    """Only the head holds: others give back; a new head takes whatever free systems it can use.

    previous_head: the head's id before the event; when the head is the same,
    it already holds what was free, so only the release step is needed.
    known: the head, when the caller knows it has not changed (no need to look for it again).
    """
    first = known if known is not None else head(uow)
    for holder in holders(uow):
        if first is None or holder.id != first.id:
            release(uow, holder, now)
    if first is not None and first.id != previous_head:
        _hold_what_is_free(uow, first, now)


def _hold_what_is_free(uow, recipe_set: RecipeSet, now: datetime) -> None:
    """A new head holds what it can use of the free systems."""
    _hold(uow, recipe_set, *_plan(uow, recipe_set, now, None, False), now)


def on_new_sets(uow, set_ids: tuple[int, ...], now: datetime) -> None:
    """Each set, in order, starts on free systems if it can. The head of the queue is found once, at the first
    set that cannot start: every set of the batch is in the queue by then, so it stays the head until it starts
    itself. As if each set had come alone: when the head is another set, only the release step is left (it
    already holds what is free); when the head is this set, it holds what is free. A job of 10 sets had looked
    for the head 10 times. The free candidates read for one set serve the next (a job's sets mostly ask alike)
    until something is booked or freed: a set started, a head's holding settled, a health check asked for."""
    first: RecipeSet | None = None
    found, memo = False, {}
    for set_id in set_ids:
        recipe_set = uow.session.get(RecipeSet, set_id)
        if recipe_set is None or recipe_set.status not in WAITING or recipe_set.ar_id is not None:
            continue  # work bound to an advance reservation is placed by services/lifecycle/advance_states.py
        started = try_start(uow, recipe_set, now, memo=memo)
        if started or any((r.spec or {}).get("healthy_within") for r in recipe_set.recipes):
            memo = {}  # systems were booked (a start, or a health check the gate asked for)
        if started:
            found = found and (first is None or first.id != set_id)  # the head started: look for the next
            continue
        if not found:
            first, found = head(uow), True
            settle_holding(uow, now, -1 if first is None or first.id == set_id else first.id, first)
            memo = {}
        elif first is not None and first.id == set_id:
            settle_holding(uow, now, -1, first)
            memo = {}


def on_system_freed(uow, system_id: int, now: datetime) -> None:
    """Offer a freed system: to the holding set first, then to waiting sets by priority then age.

    The waiting work that could use the system is found through the candidate
    index (the classes that list it), and each class's queue is read in
    scheduling order from its own index and merged: the cost depends on how
    many classes there are, not on how long the queue is. The head of the
    queue (first blocked multi-host set) that cannot start yet holds the
    system rather than let younger work take it: that keeps large sets from
    starving.
    """
    _offer(uow, system_id, now, candidates_changed=False)
    system = uow.session.get(System, system_id)
    if system is not None and system.condition == "automated":
        peers = {m.id: m for p in system.pools if p.automation_floor > 0 for m in p.systems if m.id != system_id}
        offer_to_waits(uow, list(peers.values()), now)


def offer_to_waits(uow, systems: list[System], now: datetime) -> None:
    """Offer free systems to the waiting reservations that could take them, in line order. A floored pool's
    system freed (or its floor lowered, services/catalog/pools.py): a wait the floor held back on another of the
    pool's systems may be granted now (services/queue/waitline.py try_grant checks the floor again, under its lock)."""
    for system in sorted(systems, key=lambda s: s.fqdn):
        if system.condition not in ("automated", "manual"):
            continue
        for wait_id in _offers(uow, system.id, None, recipes=False):
            if not _free_now(uow, system, now):
                break
            waitline.offer(uow, -wait_id, system.id, now)


def _offer(uow, system_id: int, now: datetime, candidates_changed: bool) -> None:
    session = uow.session
    system = session.get(System, system_id)
    if system is None or system.condition not in ("automated", "manual"):
        return
    automated = system.condition == "automated"  # only Automated systems run recipes; people reserve both
    first = head(uow) if automated else None
    for set_id in _offers(uow, system_id, first, automated):
        if not _free_now(uow, system, now):
            break
        if set_id < 0:  # a waiting reservation (waitline.queue), in the same order as recipe sets
            waitline.offer(uow, -set_id, system_id, now)
            continue
        recipe_set = session.get(RecipeSet, set_id)
        if recipe_set.status not in WAITING:
            continue
        # the head that cannot start holds the system (try_start): younger work must not take it
        try_start(uow, recipe_set, now, freed=system_id, head=first is not None and set_id == first.id)
    if automated:
        # The head is still the head when it has not started and no candidates changed: the sets before it in
        # the queue can never start (that is why it is the head), and an event adds no set.
        same = first is not None and first.status in WAITING and not candidates_changed
        settle_holding(uow, now, previous_head=first.id if first is not None else None,
                       known=first if same else None)


def _offers(uow, system_id: int, first: RecipeSet | None, recipes: bool = True):
    """Ids of recipe sets (and, negated, of waiting reservations) to offer the system to, best first, each once;
    `recipes` False: only waiting reservations (a Manual system runs no recipe)."""
    holding = first.id if first is not None and any(r.status == "assigned" for r in first.recipes) else None
    classes = list(uow.session.execute(select(ClassCandidate.class_id).where(ClassCandidate.system_id == system_id))
                   .scalars())
    queues = [_class_queue(uow, class_id) for class_id in classes] if recipes else []
    return offer_order(holding, [*queues, waitline.queue(uow, classes)])


def _class_queue(uow, class_id: int, page: int = 20):
    """One class's queued recipes in scheduling order, read a page at a time from its index."""
    after = None
    while True:
        query = (select(Recipe.priority, Recipe.queued_at, Recipe.id, Recipe.recipe_set_id)
                 .where(Recipe.class_id == class_id, Recipe.status == "queued")
                 .order_by(Recipe.priority.desc(), Recipe.queued_at, Recipe.id).limit(page))
        if after is not None:
            priority, queued_at, recipe_id = after
            query = query.where(or_(Recipe.priority < priority,
                                    and_(Recipe.priority == priority, or_(
                                        Recipe.queued_at > queued_at,
                                        and_(Recipe.queued_at == queued_at, Recipe.id > recipe_id)))))
        rows = uow.session.execute(query).all()
        for priority, queued_at, recipe_id, set_id in rows:
            yield (*queue_key(priority, queued_at, recipe_id), set_id)
        if len(rows) < page:
            return
        after = rows[-1][:3]


def _free_now(uow, system: System, now: datetime) -> bool:
    latest = calendar.latest_before(uow.session, system.resource_id, now + timedelta(microseconds=1))
    return latest is None or (latest.end_at is not None and latest.end_at <= now)


def on_system_changed(uow, system_id: int, now: datetime) -> None:
    """Requirements, pools or access changed: which waiting recipes suit the system now?"""
    session = uow.session
    system = session.get(System, system_id)
    if system is None:
        return
    for cls in list(session.execute(select(RequirementClass)).scalars()):
        compute_candidates(uow, cls, [system], only=system)
    session.flush()
    _offer(uow, system_id, now, candidates_changed=True)
    if system.condition != "automated":  # (_offer settles the holding only for an Automated system)
        settle_holding(uow, now)  # the head may have needed it: one that can never start gives back
