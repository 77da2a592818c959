"""Why recipes wait: the scheduler's explanation, its reason in words, and the queue in order."""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime

from sqlalchemy import and_, func, or_, select
from sqlalchemy.orm import aliased

from ...domain import advance as advance_rules
from ...domain import recipes as rules
from ...domain import waiting as waiting_rules
from ...domain.paging import Page, PageRequest
from ...domain.permissions import LENT_TO_ANOTHER, Actor, Permission, Rule, SystemAccess, decide_schedule
from ...domain.times import format_time
from ...domain.windows import Window, overlaps, utc
from ...scheduler.filters import Host, is_live, needs_hardware, possible, verdict, wanted_words
from ...scheduler.planner import Explanation, explain
from ...store import paging
from ...store.advance_tables import AdvanceReservation
from ...store.paging import Order
from ...store.tables import (AccessRule, Booking, ClassCandidate, Loan, Pool, PoolAccessRule, PoolSystem, Recipe,
                             RecipeSet, Reservation, System, User)
from ..catalog import health_state
from ..catalog import systems as system_service
from ..people.users import actor_for
from . import placement


@dataclass
class Snapshot:
    """The systems as why_waiting judges them, read once per request from plain rows (10,000 ORM objects
    take a second to build): hosts as the filters see them, each system's access rules and calendar."""

    hosts: list[Host]
    rows: dict[int, object]  # id -> (owner_id, condition, policy_pool_id, resource_id)
    own_rules: dict[int, tuple]
    pool_rules: dict[int, tuple]
    loans: dict[int, object]
    connection: object = None
    _hardware: list[Host] | None = None
    _verdicts: dict | None = None  # tree (as JSON) -> {system id: verdict}: recipes asking alike judged once
    _ahead_of_now: tuple | None = None  # (since, {resource id: [Window]}): bookings not over at `since`
    _holders: dict | None = None  # system id -> the name of who holds it now (read once, on first need)

    def judge(self, tree: dict | None):
        """verdict(tree, host), remembered per tree for this snapshot."""
        if self._verdicts is None:
            self._verdicts = {}
        seen = self._verdicts.setdefault(json.dumps(tree, sort_keys=True, default=str), {})

        def judged(host: Host) -> tuple:
            if host.id not in seen:
                seen[host.id] = verdict(tree, host)
            return seen[host.id]
        return judged

    def busy_until(self, system_id: int, window: Window):
        """False when nothing booked overlaps the window, else the latest end among what does (None: one is
        open-ended). The bookings not over at the window's start are read in one query per snapshot."""
        if self._ahead_of_now is None or window.start < self._ahead_of_now[0]:
            found: dict[int, list] = {}
            for resource_id, start, end in self.connection.execute(select(
                    Booking.resource_id, Booking.start_at, Booking.end_at).where(
                    or_(Booking.end_at.is_(None), Booking.end_at > window.start))):
                found.setdefault(resource_id, []).append(Window(start, end))
            self._ahead_of_now = (window.start, found)
        booked = self._ahead_of_now[1].get(self.rows[system_id].resource_id, ())
        blocking = [b for b in booked if overlaps(b, window)]
        if not blocking:
            return False
        return max(b.end for b in blocking) if all(b.end for b in blocking) else None

    def hosts_for(self, tree: dict | None) -> list[Host]:
        """The hosts, with their disks and devices (read once, on first need) when the tree looks at them."""
        if not needs_hardware(tree):
            return self.hosts
        if self._hardware is None:
            lists = {r.id: r for r in self.connection.execute(
                select(System.id, System.disks, System.devices).where(System.id.in_([h.id for h in self.hosts])))}
            self._hardware = [replace(h, disks=tuple(lists[h.id].disks or ()),
                                      devices=tuple(lists[h.id].devices or ())) for h in self.hosts]
        return self._hardware

    def live(self, hosts: list[Host], now: datetime) -> list[Host]:
        """The hosts with their live fields (who holds each now, who it is lent to), for a tree that asks."""
        if self._holders is None:
            self._holders = {row.system_id: row.name for row in self.connection.execute(
                select(Reservation.system_id, User.name).join(User, User.id == Reservation.user_id)
                .where(Reservation.returned_at.is_(None), Reservation.start_at <= now))}
        return [replace(h, user=self._holders.get(h.id),
                        loaned=self.loans[h.id].recipient.name if h.id in self.loans else None) for h in hosts]

    def access(self, system_id: int, with_loan: bool = True) -> SystemAccess:
        row = self.rows[system_id]
        rules_ = self.pool_rules.get(row.policy_pool_id, ()) if row.policy_pool_id is not None \
            else self.own_rules.get(system_id, ())
        loan = self.loans.get(system_id) if with_loan else None
        return SystemAccess(owner_id=row.owner_id, condition=row.condition, rules=rules_,
                            loan_recipient_id=loan.recipient_id if loan is not None else None)


def _rules(rows) -> dict[int, tuple]:
    found: dict[int, list] = {}
    for key, permission, user_id, group_id in rows:
        found.setdefault(key, []).append(Rule(Permission(permission), user_id, group_id))
    return {key: tuple(value) for key, value in found.items()}


def _snapshot(uow, page: tuple[int, int] | None = None) -> Snapshot:
    """Every system, or with `page` (offset, size) that slice of them in name order (and only their rules)."""
    connection = uow.session.connection()
    query = select(
        System.id, System.fqdn, System.arch, System.memory_mb, System.cpus, System.lab, System.attributes,
        System.owner_id, System.condition, System.policy_pool_id, System.resource_id, System.vendor, System.model,
        System.serial, System.location, System.lender, System.system_type, System.hypervisor, System.numa_nodes,
        System.created_at, System.last_inventoried, System.cpu, System.power, User.name.label("owner_name")) \
        .outerjoin(User, User.id == System.owner_id).where(System.condition != "removed", System.guest.is_(False))
    query = query.order_by(System.id) if page is None else query.order_by(System.fqdn).offset(page[0]).limit(page[1])
    rows = connection.execute(query).all()
    ids = [r.id for r in rows]
    pools: dict[int, set] = {}
    members = select(PoolSystem.system_id, Pool.name).join(Pool, Pool.id == PoolSystem.pool_id)
    own = select(AccessRule.system_id, AccessRule.permission, AccessRule.user_id, AccessRule.group_id)
    if page is not None:
        members, own = members.where(PoolSystem.system_id.in_(ids)), own.where(AccessRule.system_id.in_(ids))
    for system_id, name in connection.execute(members):
        pools.setdefault(system_id, set()).add(name)
    hosts = [_host(r, frozenset(pools.get(r.id, ()))) for r in rows]
    return Snapshot(hosts, {r.id: r for r in rows}, _rules(connection.execute(own)),
                    _rules(connection.execute(select(PoolAccessRule.pool_id, PoolAccessRule.permission,
                                                     PoolAccessRule.user_id, PoolAccessRule.group_id))),
                    system_service.active_loans(uow, ids), connection)


def _host(r, pools: frozenset) -> Host:
    """What the filters see of a system, as scheduling.host builds it from an object (here from a row)."""
    return Host(r.id, r.fqdn, r.arch, r.memory_mb, r.cpus, r.lab, r.attributes or {}, pools,
                vendor=r.vendor, model=r.model, serial=r.serial, location=r.location, lender=r.lender,
                system_type=r.system_type, hypervisor=r.hypervisor, status=r.condition.capitalize(),
                owner=r.owner_name, powertype=(r.power or {}).get("driver"), numa_nodes=r.numa_nodes,
                added=r.created_at.date(), last_inventoried=r.last_inventoried.date() if r.last_inventoried else None,
                cpu=r.cpu or {})


def why_waiting(uow, recipe: Recipe, now: datetime, snapshot: Snapshot | None = None,
                ahead: int | None = None, summaries: Summaries | None = None) -> dict:
    """The scheduler's explanation and its reason in words (domain/waiting.py); `ahead` (the recipe
    sets before it in the queue) is counted when not given. With `summaries` (the queue) a recipe whose class
    has candidates is explained from them in SQL (`Summaries`); otherwise every system's verdict is counted."""
    runtime = placement.runtime_of(recipe)
    window = Window(now, now + runtime if runtime else None)
    ar = uow.session.get(AdvanceReservation, recipe.recipe_set.ar_id) if recipe.recipe_set.ar_id else None
    waits_for_ar = ar and advance_rules.bound_wait(ar.id, ar.state, ar.start_at, ar.error_handling)
    holding = recipe.system.fqdn if recipe.status == "assigned" else None
    if waits_for_ar or holding:  # the systems are not what it waits for: nothing to count
        result = Explanation()
    else:
        result = summaries.of(recipe, window) if summaries is not None else None
        if result is None:
            seen = snapshot or (summaries.snapshot() if summaries is not None else _snapshot(uow))
            result = _explained(uow, seen, recipe, window, now)
    if holding:
        message = f"holding {holding} until the rest of its recipe set can start"
    else:
        message = (waits_for_ar or (result.free and health_state.waiting_for_health(uow, recipe)) or result.message()
                   or "waiting for its recipe set's other recipes")
    if ahead is None:
        ahead = sets_ahead(uow, recipe.recipe_set)
    free_now, booked_from = _booked_ahead(uow, result.busy, now) if runtime is None else (0, None)
    said = waiting_rules.reason(waiting_rules.Facts(
        result.candidates, result.ruled_out, result.busy, ahead, holding, waits_for_ar or None, result.live,
        waiting_rules.pinned_system(recipe.spec.get("force"), recipe.spec.get("host_requires")), free_now,
        booked_from))
    return {"message": message, **said.as_dict(), "ahead": ahead, "systems": result.total,
            "candidates": result.candidates, "ruled_out": result.ruled_out,
            "busy": [{"system": fqdn, "until": format_time(until)} for fqdn, until in result.busy],
            "free": result.free[:FREE_SHOWN]}


FREE_SHOWN = 20  # free candidates named in an explanation (the count is in `candidates`)
BUSY_LOOKED_AT = 100  # busy candidates whose bookings a recipe without a runtime limit looks at


def _booked_ahead(uow, busy: list[tuple[str, datetime | None]], now: datetime) -> tuple[int, datetime | None]:
    """For a recipe without a runtime limit: how many of its busy candidates are free now but booked later (which
    a runtime limit ending before that booking would let it use now), and the first start of those bookings."""
    if not busy:
        return 0, None
    firsts = uow.session.execute(
        select(func.min(Booking.start_at)).join(System, System.resource_id == Booking.resource_id)
        .where(System.fqdn.in_([fqdn for fqdn, _ in busy[:BUSY_LOOKED_AT]]),
               or_(Booking.end_at.is_(None), Booking.end_at > now))
        .group_by(System.id)).scalars().all()
    ahead = [utc(first) for first in firsts if utc(first) > now]  # nothing holds it now
    return len(ahead), min(ahead, default=None)


def _usable(uow, seen: Snapshot, recipe: Recipe):
    owner = actor_for(uow, recipe.recipe_set.job.owner)

    def usable(h):
        decision = decide_schedule(owner, seen.access(h.id))
        if decision.reason == LENT_TO_ANOTHER:  # name the loan only when it alone is in the way (it passes)
            lasting = decide_schedule(owner, seen.access(h.id, with_loan=False))
            decision = decision if lasting.allowed else lasting
        return decision.allowed, None if decision.allowed else decision.reason
    return usable


def _explained(uow, seen: Snapshot, recipe: Recipe, window: Window, now: datetime) -> Explanation:
    """Every system's verdict for the recipe, counted per reason (a few ms per thousand systems)."""
    tree = recipe.spec.get("host_requires")
    hosts = seen.live(seen.hosts_for(tree), now) if is_live(tree) else seen.hosts_for(tree)
    result = explain(tree, hosts, _usable(uow, seen, recipe), lambda system_id: seen.busy_until(system_id, window),
                     recipe.spec.get("force"), judge=seen.judge(tree))
    if is_live(tree):  # ruled out now, but may suit once its holder or loan changes: not "never"
        judge = seen.judge(tree)
        result.live = sum(1 for h in hosts if not judge(h)[0] and possible(tree, h))
    return result


def reasons_page(uow, recipe_id: int, now: datetime, offset: int, size: int = 100) -> list[tuple[str, str | None]]:
    """Each system's verdict for the recipe, `size` systems from `offset` in name order: (fqdn, why it is ruled
    out, None for a candidate). What a job's page shows on expanding, a page at a time (however many systems)."""
    recipe = uow.session.get(Recipe, recipe_id)
    seen = _snapshot(uow, (offset, size))
    tree, force = recipe.spec.get("host_requires"), recipe.spec.get("force")
    hosts = seen.live(seen.hosts_for(tree), now) if is_live(tree) else seen.hosts_for(tree)
    judge, usable = seen.judge(tree), _usable(uow, seen, recipe)
    found = []
    for host in hosts:
        if force is not None and host.fqdn != force:
            found.append((host.fqdn, f"not the forced system {force}"))
            continue
        ok, reason = judge(host)
        found.append((host.fqdn, usable(host)[1] if ok else reason))
    return found


class Summaries:
    """The queue's explanations from the scheduler's candidate lists (services/queue/scheduling.py ClassCandidate),
    once per requirement class and runtime: the systems outside the list are counted in SQL under one reason
    (NOT_CANDIDATE), so a queue of 50 recipes over 10,000 systems costs a few queries rather than 500,000
    verdicts. Each reason apart is on the recipe's own page (GET /recipes/{id}, the job page)."""

    def __init__(self, uow, now: datetime):
        self.uow, self.session, self.now = uow, uow.session, now
        self._rows: dict[tuple, list] = {}  # (class id, window end) -> its candidates' rows
        self._done: dict[tuple, Explanation | None] = {}
        self._total: int | None = None
        self._snapshot: Snapshot | None = None
        self._owners: dict[int, Actor] = {}

    def _owner(self, user: User) -> Actor:
        if user.id not in self._owners:
            self._owners[user.id] = actor_for(self.uow, user)
        return self._owners[user.id]

    def snapshot(self) -> Snapshot:
        if self._snapshot is None:
            self._snapshot = _snapshot(self.uow)
        return self._snapshot

    def prepare(self, recipes: list[Recipe]) -> None:
        """Read the candidates of every recipe's class at once, one query per distinct runtime."""
        wanted: dict[datetime | None, set[int]] = {}
        for recipe in recipes:
            if recipe.class_id is not None:
                wanted.setdefault(self._window(recipe).end, set()).add(recipe.class_id)
        for end, class_ids in wanted.items():
            self._read(Window(self.now, end), class_ids - {c for c, e in self._rows if e == end})

    def of(self, recipe: Recipe, window: Window) -> Explanation | None:
        """None when the list cannot say it: no class, or live requirements (who holds a system now), or no
        candidate at all (then the reasons in words are the whole answer: each one is counted)."""
        if recipe.class_id is None or is_live(recipe.spec.get("host_requires")):
            return None
        key = (recipe.class_id, window.end)
        if key not in self._done:
            if key not in self._rows:
                self._read(window, {recipe.class_id})
            self._done[key] = self._summary(recipe, window, self._rows[key])
        found = self._done[key]
        return None if found is None else replace(found, ruled_out=dict(found.ruled_out), busy=list(found.busy),
                                                  free=list(found.free))

    def _window(self, recipe: Recipe) -> Window:
        runtime = placement.runtime_of(recipe)
        return Window(self.now, self.now + runtime if runtime else None)

    def _read(self, window: Window, class_ids: set[int]) -> None:
        if not class_ids:
            return
        latest = select(Booking.id).where(Booking.resource_id == System.resource_id).order_by(
            Booking.start_at.desc()).limit(1)
        if window.end is not None:
            latest = latest.where(Booking.start_at < window.end)
        # Bookings of a system never overlap: the latest to start before the window's end is the one that
        # ends last among those in the window, if it ends after the window's start.
        last = aliased(Booking)
        rows = self.session.execute(
            select(ClassCandidate.class_id, System.fqdn, System.condition, System.owner_id, last.end_at,
                   last.id.label("booked"), Loan.recipient_id)
            .select_from(ClassCandidate).join(System, System.id == ClassCandidate.system_id)
            .outerjoin(last, last.id == latest.scalar_subquery())
            .outerjoin(Loan, and_(Loan.system_id == System.id, Loan.returned_at.is_(None)))
            .where(ClassCandidate.class_id.in_(class_ids), System.condition != "removed", System.guest.is_(False))
            .order_by(ClassCandidate.class_id, ClassCandidate.rank, System.fqdn)).all()
        for class_id in class_ids:
            self._rows[(class_id, window.end)] = []
        for row in rows:
            self._rows[(row.class_id, window.end)].append(row)

    def _summary(self, recipe: Recipe, window: Window, rows: list) -> Explanation | None:
        if not rows:
            return None
        owner = self._owner(recipe.recipe_set.job.owner)
        result = Explanation(total=self.total())
        result.ruled_out[waiting_rules.NOT_CANDIDATE] = result.total - len(rows)
        for row in rows:
            decision = decide_schedule(owner, SystemAccess(row.owner_id, row.condition, (), row.recipient_id))
            if not decision.allowed and decision.reason != "you may not use this system":
                result.ruled_out[decision.reason] = result.ruled_out.get(decision.reason, 0) + 1
                continue  # (its rules let the owner use it: it is on the list; only condition and loan count)
            result.candidates += 1
            if row.booked is not None and (row.end_at is None or row.end_at > window.start):
                result.busy.append((row.fqdn, row.end_at))
            elif len(result.free) < FREE_SHOWN:
                result.free.append(row.fqdn)
        result.ruled_out = {k: v for k, v in result.ruled_out.items() if v}
        result.busy.sort(key=lambda item: (item[1] is None, item[1].timestamp() if item[1] else 0))
        return result

    def total(self) -> int:
        if self._total is None:
            self._total = self.session.execute(select(func.count()).select_from(System).where(
                System.condition != "removed", System.guest.is_(False))).scalar_one()
        return self._total


def sets_ahead(uow, recipe_set: RecipeSet) -> int:
    """Waiting recipe sets the scheduler offers systems to before this one (scheduling.queue_order)."""
    before = or_(RecipeSet.priority > recipe_set.priority,
                 and_(RecipeSet.priority == recipe_set.priority,
                      or_(RecipeSet.queued_at < recipe_set.queued_at,
                          and_(RecipeSet.queued_at == recipe_set.queued_at, RecipeSet.id < recipe_set.id))))
    return uow.session.execute(select(func.count()).select_from(RecipeSet).where(
        RecipeSet.status.in_(placement.WAITING), before)).scalar_one()


# The queue's order (scheduling.queue_order), then each set's recipes by id
QUEUE_ORDER = (Order(RecipeSet.priority, descending=True), Order(RecipeSet.queued_at), Order(RecipeSet.id),
               Order(Recipe.id))


def queue(uow, actor: Actor, now: datetime, page: PageRequest = PageRequest(), details: bool = False) -> Page:
    """Waiting recipes in scheduling order, a page of them, each with why it waits (details: the explanation's
    counts too, as `summary` makes them: the web's queue page shows them on expanding)."""
    query = select(Recipe).join(RecipeSet, RecipeSet.id == Recipe.recipe_set_id).where(
        RecipeSet.status.in_(placement.WAITING), Recipe.status.in_(placement.WAITING))
    found = paging.fetch(uow, "queue", query, QUEUE_ORDER, page)
    summaries = Summaries(uow, now)
    summaries.prepare(found.items)
    out, ahead, last_set = [], None, None
    for recipe in found.items:
        recipe_set = recipe.recipe_set
        if ahead is None:
            ahead = sets_ahead(uow, recipe_set)  # counted once: the page's later sets follow in order
        elif recipe_set.id != last_set:
            ahead += 1
        last_set = recipe_set.id
        why = why_waiting(uow, recipe, now, ahead=ahead, summaries=summaries)
        out.append({"recipe": recipe.id, "job": recipe.job_id, "owner": recipe_set.job.owner.name,
                    "priority": rules.PRIORITIES[recipe_set.priority], "status": recipe.status,
                    "queued_at": format_time(recipe_set.queued_at), "position": ahead + 1,
                    "waiting": round((now - recipe_set.queued_at).total_seconds()),
                    "wants": _wants(recipe.spec), "why": why["message"],
                    "reason": {k: why[k] for k in ("category", "sentence", "action")}}
                   | ({"explanation": why} if details else {}))
    return Page(out, found.next_after)


def _wants(spec: dict) -> str:
    """What a recipe asks for, in one line a person reads."""
    return wanted_words(spec.get("force"), spec.get("host_requires"), spec.get("distro_requires"))
