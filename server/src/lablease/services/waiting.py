"""Why recipes wait: the scheduler's explanation, its reason in words, and the queue in order."""
from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime

from sqlalchemy import and_, func, or_, select

from ..domain import advance as advance_rules
from ..domain import recipes as rules
from ..domain import waiting as waiting_rules
from ..domain.permissions import LENT_TO_ANOTHER, Actor, Permission, Rule, SystemAccess, decide_schedule
from ..domain.times import format_time
from ..domain.windows import Window, overlaps
from ..scheduler.planner import explain
from ..domain.paging import Page, PageRequest
from ..store import paging
from ..store.paging import Order
from ..scheduler.filters import Host, is_live, needs_hardware, possible, verdict
from ..store.tables import (AccessRule, AdvanceReservation, Booking, Pool, PoolAccessRule, PoolSystem, Recipe,
                            RecipeSet, Reservation, System, User)
from . import health, placement
from . import systems as system_service
from .users import actor_for


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


def _snapshot(session) -> Snapshot:
    connection = session.connection()
    rows = connection.execute(select(
        System.id, System.fqdn, System.arch, System.memory_mb, System.cpus, System.lab, System.attributes,
        System.owner_id, System.condition, System.policy_pool_id, System.resource_id, System.vendor, System.model,
        System.serial, System.location, System.lender, System.system_type, System.hypervisor, System.numa_nodes,
        System.created_at, System.last_inventoried, System.cpu, System.power, User.name.label("owner_name"))
        .outerjoin(User, User.id == System.owner_id)
        .where(System.condition != "removed", System.guest.is_(False)).order_by(System.id)).all()
    pools: dict[int, set] = {}
    for system_id, name in connection.execute(select(PoolSystem.system_id, Pool.name).join(
            Pool, Pool.id == PoolSystem.pool_id)):
        pools.setdefault(system_id, set()).add(name)
    hosts = [_host(r, frozenset(pools.get(r.id, ()))) for r in rows]
    return Snapshot(hosts, {r.id: r for r in rows},
                    _rules(connection.execute(select(AccessRule.system_id, AccessRule.permission,
                                                     AccessRule.user_id, AccessRule.group_id))),
                    _rules(connection.execute(select(PoolAccessRule.pool_id, PoolAccessRule.permission,
                                                     PoolAccessRule.user_id, PoolAccessRule.group_id))),
                    system_service.active_loans(session, [r.id for r in rows]), connection)


def _host(r, pools: frozenset) -> Host:
    """What the filters see of a system, as scheduling.host builds it from an object (here from a row)."""
    return Host(r.id, r.fqdn, r.arch, r.memory_mb, r.cpus, r.lab, r.attributes or {}, pools,
                vendor=r.vendor, model=r.model, serial=r.serial, location=r.location, lender=r.lender,
                system_type=r.system_type, hypervisor=r.hypervisor, status=r.condition.capitalize(),
                owner=r.owner_name, powertype=(r.power or {}).get("driver"), numa_nodes=r.numa_nodes,
                added=r.created_at.date(), last_inventoried=r.last_inventoried.date() if r.last_inventoried else None,
                cpu=r.cpu or {})


def why_waiting(session, recipe: Recipe, now: datetime, snapshot: Snapshot | None = None,
                ahead: int | None = None) -> dict:
    """The scheduler's explanation and its reason in words (domain/waiting.py); `ahead` (the recipe
    sets before it in the queue) is counted when not given."""
    owner = actor_for(session, recipe.recipe_set.job.owner)
    seen = snapshot or _snapshot(session)

    def usable(h):
        decision = decide_schedule(owner, seen.access(h.id))
        if decision.reason == LENT_TO_ANOTHER:  # name the loan only when it alone is in the way (it passes)
            lasting = decide_schedule(owner, seen.access(h.id, with_loan=False))
            decision = decision if lasting.allowed else lasting
        return decision.allowed, None if decision.allowed else decision.reason

    runtime = placement.runtime_of(recipe)
    window = Window(now, now + runtime if runtime else None)

    tree = recipe.spec.get("host_requires")
    hosts = seen.live(seen.hosts_for(tree), now) if is_live(tree) else seen.hosts_for(tree)
    result = explain(tree, hosts, usable, lambda system_id: seen.busy_until(system_id, window),
                     recipe.spec.get("force"), judge=seen.judge(tree))
    if is_live(tree):  # ruled out now, but may suit once its holder or loan changes: not "never"
        judge = seen.judge(tree)
        result.live = sum(1 for h in hosts if not judge(h)[0] and possible(tree, h))
    ar = session.get(AdvanceReservation, recipe.recipe_set.ar_id) if recipe.recipe_set.ar_id else None
    waits_for_ar = ar and advance_rules.bound_wait(ar.id, ar.state, ar.start_at, ar.error_handling)
    holding = recipe.system.fqdn if recipe.status == "assigned" else None
    if holding:
        message = f"holding {holding} until the rest of its recipe set can start"
    else:
        message = (waits_for_ar or (result.free and health.waiting_for_health(session, recipe)) or result.message()
                   or "waiting for its recipe set's other recipes")
    if ahead is None:
        ahead = sets_ahead(session, recipe.recipe_set)
    said = waiting_rules.reason(waiting_rules.Facts(result.candidates, result.ruled_out, result.busy, ahead,
                                                    holding, waits_for_ar or None, result.live))
    return {"message": message, **said.as_dict(), "ahead": ahead, "systems": result.total,
            "candidates": result.candidates, "ruled_out": result.ruled_out,
            "busy": [{"system": fqdn, "until": format_time(until)} for fqdn, until in result.busy],
            "free": result.free[:FREE_SHOWN]}


FREE_SHOWN = 20  # free candidates named in an explanation (the count is in `candidates`)


def sets_ahead(session, recipe_set: RecipeSet) -> int:
    """Waiting recipe sets the scheduler offers systems to before this one (scheduling.queue_order)."""
    before = or_(RecipeSet.priority > recipe_set.priority,
                 and_(RecipeSet.priority == recipe_set.priority,
                      or_(RecipeSet.queued_at < recipe_set.queued_at,
                          and_(RecipeSet.queued_at == recipe_set.queued_at, RecipeSet.id < recipe_set.id))))
    return session.execute(select(func.count()).select_from(RecipeSet).where(
        RecipeSet.status.in_(placement.WAITING), before)).scalar_one()


# The queue's order (scheduling.queue_order), then each set's recipes by id
QUEUE_ORDER = (Order(RecipeSet.priority, descending=True), Order(RecipeSet.queued_at), Order(RecipeSet.id),
               Order(Recipe.id))


def queue(uow, actor: Actor, now: datetime, page: PageRequest = PageRequest(), details: bool = False) -> Page:
    """Waiting recipes in scheduling order, a page of them, each with why it waits (details: the whole
    explanation too, as GET /recipes/{id} gives it: the web's queue page shows it per candidate on expanding)."""
    session = uow.session
    query = select(Recipe).join(RecipeSet, RecipeSet.id == Recipe.recipe_set_id).where(
        RecipeSet.status.in_(placement.WAITING), Recipe.status.in_(placement.WAITING))
    found = paging.fetch(uow, "queue", query, QUEUE_ORDER, page)
    snapshot = _snapshot(session) if found.items else None
    out, ahead, last_set = [], None, None
    for recipe in found.items:
        recipe_set = recipe.recipe_set
        if ahead is None:
            ahead = sets_ahead(session, recipe_set)  # counted once: the page's later sets follow in order
        elif recipe_set.id != last_set:
            ahead += 1
        last_set = recipe_set.id
        why = why_waiting(session, recipe, now, snapshot, ahead=ahead)
        out.append({"recipe": recipe.id, "job": recipe.job_id, "owner": recipe_set.job.owner.name,
                    "priority": rules.PRIORITIES[recipe_set.priority], "status": recipe.status,
                    "queued_at": format_time(recipe_set.queued_at), "position": ahead + 1,
                    "waiting": round((now - recipe_set.queued_at).total_seconds()),
                    "wants": _wants(recipe.spec), "why": why["message"],
                    "reason": {k: why[k] for k in ("category", "sentence", "action")}}
                   | ({"explanation": why} if details else {}))
    return Page(out, found.next_after)


def _wants(spec: dict) -> str:
    """What a recipe asks for, in one line: its distro and host requirements as submitted."""
    distro = (spec.get("distro_requires") or {})
    parts = [spec.get("force") and f"system {spec['force']}", json.dumps(spec.get("host_requires"))
             if spec.get("host_requires") else "any system"]
    if distro:
        parts.append("distro " + json.dumps(distro))
    return ", ".join(p for p in parts if p)
