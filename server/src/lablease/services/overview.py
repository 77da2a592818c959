"""What the web's systems list and a system's page show, read in a few queries (the rules stay in domain/).

The listing shares its filters and visibility with the API's (systems.filtered, systems.visible_systems);
it adds the counts of the header, grouping, paging, and each state's "since".
"""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import func, select
from sqlalchemy.orm import selectinload

from ..domain.actions import Holding, aborted_share, primary_action
from ..domain.paging import PageRequest
from ..domain.permissions import Actor, Permission, Rule, SystemAccess, decide, decide_schedule
from ..scheduler.filters import matches
from ..store.tables import (AccessRule, Pool, PoolAccessRule, PoolSystem, Recipe, Reservation, System, UsageChange,
                            User)
from ..store import queries
from . import activity
from . import systems as system_service
from .users import actor_for

GROUPS = ("pool", "condition", "holder")
USABLE = ("automated", "manual")
RECENT_RECIPES = 20  # a system's health: the share of its last recipes that were aborted
HISTORY_SHOWN = 50  # a system page's history: its newest activity entries
QUEUE_LOOKED_AT = 500  # "N queued recipes could use it" looks at the oldest this many


def holders(session, now: datetime) -> dict[int, tuple[str, datetime | None]]:
    """System id -> (holder's name, end) of every reservation in force now: one query for all systems."""
    rows = session.connection().execute(select(Reservation.system_id, User.name, Reservation.end_at)
                           .join(User, User.id == Reservation.user_id)
                           .where(Reservation.returned_at.is_(None), Reservation.start_at <= now))
    return {system_id: (name, end) for system_id, name, end in rows}


def since(session, system_ids: list[int]) -> dict[tuple[int, str], datetime]:
    """(system id, "usage" | "condition") -> when it last changed."""
    if not system_ids:
        return {}
    rows = session.execute(select(UsageChange.system_id, UsageChange.field, func.max(UsageChange.at))
                           .where(UsageChange.system_id.in_(system_ids))
                           .group_by(UsageChange.system_id, UsageChange.field))
    return {(system_id, field): at for system_id, field, at in rows}


def queued_count(session) -> int:
    return session.execute(select(func.count()).select_from(Recipe).where(Recipe.status == "queued")).scalar_one()


class Row(NamedTuple):
    """What the listing needs of every matching system before paging: a few columns, no ORM object."""

    id: int
    fqdn: str
    condition: str
    owner_id: int | None
    policy_pool_id: int | None


def visible_rows(session, actor: Actor, query) -> list[Row]:
    """The systems of `query` the actor may view, decided by domain.permissions.decide as for the API's list,
    from plain rows: 10,000 ORM objects take seconds to build, their columns milliseconds."""
    columns = (System.id, System.fqdn, System.condition, System.owner_id, System.policy_pool_id)
    connection = session.connection()  # Core rows: no ORM loading for what is only looked at
    rows = [Row(*r) for r in connection.execute(query.with_only_columns(*columns).order_by(None)
                                                .order_by(System.fqdn))]
    if actor.is_admin:
        return rows
    # Which systems (and pools) have a view rule that applies to the actor: each rule judged once (Rule.applies_to)
    own = {system_id for system_id, user_id, group_id in connection.execute(select(
        AccessRule.system_id, AccessRule.user_id, AccessRule.group_id).where(AccessRule.permission == "view"))
        if Rule(Permission.VIEW, user_id, group_id).applies_to(actor)}
    pooled = {pool_id for pool_id, user_id, group_id in connection.execute(select(
        PoolAccessRule.pool_id, PoolAccessRule.user_id, PoolAccessRule.group_id)
        .where(PoolAccessRule.permission == "view")) if Rule(Permission.VIEW, user_id, group_id).applies_to(actor)}
    applying = (Rule(Permission.VIEW, actor.id),)
    decided: dict[tuple, bool] = {}  # decide once per kind of system (owned or not, a rule applies or not)

    def may_view(row: Row) -> bool:  # access as systems.access_of builds it: the pool's policy when used
        applies = row.policy_pool_id in pooled if row.policy_pool_id is not None else row.id in own
        key = (row.owner_id == actor.id, applies, row.condition)
        if key not in decided:
            access = SystemAccess(owner_id=row.owner_id, condition=row.condition, rules=applying if applies else ())
            decided[key] = bool(decide(actor, Permission.VIEW, access))
        return decided[key]

    return [row for row in rows if may_view(row)]


def pool_names(session) -> dict[int, str]:
    """System id -> its pools' names, joined (for grouping by pool)."""
    names = defaultdict(list)
    for system_id, name in session.connection().execute(select(PoolSystem.system_id, Pool.name)
                                           .join(Pool, Pool.id == PoolSystem.pool_id).order_by(Pool.name)):
        names[system_id].append(name)
    return {system_id: ", ".join(found) for system_id, found in names.items()}


def group_of(group: str | None, session, held: dict):
    if group == "pool":
        pools = pool_names(session)
        return lambda row: pools.get(row.id, "(no pool)")
    if group == "condition":
        return lambda row: row.condition
    if group == "holder":
        return lambda row: held[row.id][0] if row.id in held else "(free)"
    return None


def systems_page(uow, actor: Actor, now: datetime, filters: dict, group: str | None, page: int,
                 per_page: int) -> dict:
    """One page of the systems matching the filters, with the header's counts over all of them."""
    session = uow.session
    rows = visible_rows(session, actor, system_service.filtered(session, actor, now, filters))
    held = holders(session, now)
    key = group_of(group, session, held)
    if key is not None:
        rows.sort(key=lambda row: (key(row), row.fqdn))
    pages = max(1, -(-len(rows) // per_page))
    page = min(max(1, page), pages)
    shown = rows[(page - 1) * per_page: page * per_page]
    by_id = {s.id: s for s in session.execute(select(System).where(System.id.in_([r.id for r in shown])).options(
        selectinload(System.pools), selectinload(System.owner), selectinload(System.policy_pool))).unique().scalars()}
    systems = [by_id[row.id] for row in shown]
    changed = since(session, [s.id for s in systems])
    described = system_service.describe_many(session, systems, now)
    for row, system, out in zip(shown, systems, described):
        out["usage_since"] = changed.get((system.id, "usage"), system.created_at)
        out["condition_since"] = changed.get((system.id, "condition"), system.created_at)
        out["group"] = key(row) if key else None
    return {"rows": described, "total": len(rows), "page": page, "pages": pages,
            "available": sum(1 for row in rows if row.condition in USABLE and row.id not in held),
            "queued": queued_count(session)}


def system_page(uow, actor: Actor, now: datetime, fqdn: str) -> dict:
    session = uow.session
    system = system_service.find(session, fqdn, actor)
    loan = system_service.active_loan(session, system)
    access = system_service.access_of(system, loan)
    current = system_service.current_reservations(session, [system.id], now).get(system.id)
    holding = Holding(current.user.name, current.end_at, current.user_id == actor.id) if current else Holding()
    may_borrow = bool(decide(actor, Permission.LOAN_SELF, access) or decide(actor, Permission.LOAN_ANY, access))
    action = primary_action(decide(actor, Permission.RESERVE, access), may_borrow, holding,
                            loan.recipient.name if loan else None)
    changed = since(session, [system.id])
    statuses = session.execute(select(Recipe.status)
                               .where(Recipe.system_id == system.id, Recipe.finished_at.is_not(None))
                               .order_by(Recipe.finished_at.desc()).limit(RECENT_RECIPES)).scalars()
    return {
        "system": system_service.describe(session, system, now),
        "usage_since": changed.get((system.id, "usage"), system.created_at),
        "condition_since": changed.get((system.id, "condition"), system.created_at),
        "action": action,
        "reservation_id": current.id if current is not None and holding.mine else None,
        "my_loan": loan is not None and loan.recipient_id == actor.id,
        "queued_could_use": queued_could_use(session, system, loan),
        "aborted_share": aborted_share(list(statuses)),
        "history": activity.entries(uow, "system", system.fqdn, PageRequest(HISTORY_SHOWN)).items,
    }


def queued_could_use(session, system: System, loan) -> int:
    """Queued recipes whose requirements this system meets and whose owner may run on it (Beaker's hint)."""
    if system.condition not in USABLE:
        return 0
    host, access = queries.host(system), system_service.access_of(system, loan)
    recipes = session.execute(select(Recipe).where(Recipe.status == "queued").order_by(Recipe.id)
                              .limit(QUEUE_LOOKED_AT)).unique().scalars()
    owners: dict[int, Actor] = {}
    count = 0
    for recipe in recipes:
        job_owner = recipe.recipe_set.job.owner
        owner = owners.setdefault(job_owner.id, actor_for(session, job_owner))
        if matches(recipe.spec.get("host_requires"), host) and decide_schedule(owner, access):
            count += 1
    return count
