"""What the web's systems list and a system's page show, read in a few queries (the rules stay in domain/).

The listing shares its filters and visibility with the API's (systems.filtered, systems.visible_systems);
it adds the counts of the header, grouping, paging, and each state's "since".
"""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import NamedTuple

from sqlalchemy import and_, case, exists, false, func, or_, select
from sqlalchemy.orm import selectinload

from ...domain.actions import Holding, aborted_share, primary_action
from ...domain.paging import PageRequest
from ...domain.permissions import Actor, Permission, Rule, SystemAccess, decide, decide_schedule, may_use
from ...scheduler.filters import matches
from ...store import queries
from ...store.tables import (AccessRule, Loan, Pool, PoolAccessRule, PoolSystem, Recipe, Reservation, System,
                             UsageChange, User)
from ..catalog import systems as system_service
from ..people.users import actor_for
from ..records import activity

GROUPS = ("pool", "condition", "holder")
USABLE = ("automated", "manual")
RECENT_RECIPES = 20  # a system's health: the share of its last recipes that were aborted
HISTORY_SHOWN = 50  # a system page's history: its newest activity entries
QUEUE_LOOKED_AT = 500  # "N queued recipes could use it" looks at the oldest this many


def holders(uow, now: datetime) -> dict[int, tuple[str, datetime | None]]:
    """System id -> (holder's name, end) of every reservation in force now: one query for all systems."""
    rows = uow.session.connection().execute(select(Reservation.system_id, User.name, Reservation.end_at)
                           .join(User, User.id == Reservation.user_id)
                           .where(Reservation.returned_at.is_(None), Reservation.start_at <= now))
    return {system_id: (name, end) for system_id, name, end in rows}


def held_now(now: datetime):
    """A condition on systems: a reservation holds it now (as `holders` lists them)."""
    return exists().where(Reservation.system_id == System.id, Reservation.returned_at.is_(None),
                          Reservation.start_at <= now)


def since(uow, system_ids: list[int]) -> dict[tuple[int, str], datetime]:
    """(system id, "usage" | "condition") -> when it last changed."""
    if not system_ids:
        return {}
    rows = uow.session.execute(select(UsageChange.system_id, UsageChange.field, func.max(UsageChange.at))
                           .where(UsageChange.system_id.in_(system_ids))
                           .group_by(UsageChange.system_id, UsageChange.field))
    return {(system_id, field): at for system_id, field, at in rows}


def queued_count(uow) -> int:
    return uow.session.execute(select(func.count()).select_from(Recipe).where(Recipe.status == "queued")).scalar_one()


class Row(NamedTuple):
    """What the listing needs of every matching system before paging: a few columns, no ORM object."""

    id: int
    fqdn: str
    condition: str
    owner_id: int | None
    policy_pool_id: int | None


class Seen(NamedTuple):
    """How many of the visible systems have a condition and are held now or not: the header's counts."""

    condition: str
    held: bool
    count: int


def visible(uow, actor: Actor, query, now: datetime | None = None) -> tuple[object, list[Seen]]:
    """`query` narrowed to the systems the actor may view, and their counts, from ONE grouped scan: visibility is
    decided by domain.permissions.decide as for the API's list, once per kind of system found (owned by the actor
    or not, a view rule applies or not, its condition), so a page counts in SQL and builds no row, ORM object or
    decision per system. When every kind found is visible (a site's usual "everybody may view"), the query is
    left as it is. `held` (a reservation holds it at `now`) is counted only when `now` is given."""
    session = uow.session
    owned = case((System.owner_id == actor.id, True), else_=False)
    applies = false() if actor.is_admin else _view_rule_applies(session.connection(), actor)
    held = held_now(now) if now is not None else false()
    kinds = query.with_only_columns(owned.label("owned"), applies.label("applies"), System.condition.label("condition"),
                                    held.label("held")).order_by(None).subquery()
    found = session.connection().execute(select(kinds.c.owned, kinds.c.applies, kinds.c.condition, kinds.c.held,
                                                func.count()).group_by(kinds.c.owned, kinds.c.applies,
                                                                       kinds.c.condition, kinds.c.held)).all()
    applying = (Rule(Permission.VIEW, actor.id),)
    allowed = {(bool(mine), bool(applied), condition): bool(decide(actor, Permission.VIEW, SystemAccess(
        owner_id=actor.id if mine else None, condition=condition, rules=applying if applied else ())))
        for mine, applied, condition, _, _ in found}
    seen = [Seen(condition, bool(is_held), n) for mine, applied, condition, is_held, n in found
            if allowed[(bool(mine), bool(applied), condition)]]
    if all(allowed.values()):
        return query, seen
    return query.where(or_(false(), *(and_(owned if mine else ~owned, applies if applied else ~applies,
                                           System.condition == condition)
                                      for (mine, applied, condition), ok in allowed.items() if ok))), seen


def all_rows(uow, query) -> list[Row]:
    """Every system of `query` (narrowed by `visible`), by name, as plain rows (what grouping sorts):
    10,000 ORM objects take seconds to build, their columns milliseconds."""
    columns = (System.id, System.fqdn, System.condition, System.owner_id, System.policy_pool_id)
    return [Row(*row) for row in uow.session.connection().execute(
        query.with_only_columns(*columns).order_by(None).order_by(System.fqdn))]


def page_of(uow, query, total: int, page: int, per_page: int) -> tuple[list[Row], int, int]:
    """One page (by name) of the `total` systems of `query`: its rows, the page shown and the page count."""
    pages = max(1, -(-total // per_page))
    page = min(max(1, page), pages)
    columns = (System.id, System.fqdn, System.condition, System.owner_id, System.policy_pool_id)
    rows = [Row(*row) for row in uow.session.connection().execute(query.with_only_columns(*columns).order_by(None)
                                                               .order_by(System.fqdn).limit(per_page)
                                                               .offset((page - 1) * per_page))]
    return rows, page, pages


def _view_rule_applies(connection, actor: Actor, permission: Permission = Permission.VIEW):
    """A column: does a rule of the system (or of its policy pool, when it uses one) granting `permission` (view
    unless told) apply to the actor? Rule.applies_to judges each distinct (user, group) of those rules once; SQL
    matches rows against them."""
    def matching(table):
        pairs = connection.execute(select(table.user_id, table.group_id).where(table.permission == permission.value)
                                   .distinct()).all()
        chosen = [and_(table.user_id.is_(None) if user is None else table.user_id == user,
                       table.group_id.is_(None) if group is None else table.group_id == group)
                  for user, group in pairs if Rule(permission, user, group).applies_to(actor)]
        return or_(false(), *chosen)

    own = exists().where(AccessRule.system_id == System.id, AccessRule.permission == permission.value,
                         matching(AccessRule))
    pooled = exists().where(PoolAccessRule.pool_id == System.policy_pool_id,
                            PoolAccessRule.permission == permission.value, matching(PoolAccessRule))
    return case((System.policy_pool_id.is_not(None), pooled), else_=own)


def pool_names(uow) -> dict[int, str]:
    """System id -> its pools' names, joined (for grouping by pool)."""
    names = defaultdict(list)
    for system_id, name in uow.session.connection().execute(select(PoolSystem.system_id, Pool.name)
                                           .join(Pool, Pool.id == PoolSystem.pool_id).order_by(Pool.name)):
        names[system_id].append(name)
    return {system_id: ", ".join(found) for system_id, found in names.items()}


def group_of(group: str | None, uow, held: dict):
    if group == "pool":
        pools = pool_names(uow)
        return lambda row: pools.get(row.id, "(no pool)")
    if group == "condition":
        return lambda row: row.condition
    if group == "holder":
        return lambda row: held[row.id][0] if row.id in held else "(free)"
    return None


def systems_page(uow, actor: Actor, now: datetime, filters: dict, group: str | None, page: int,
                 per_page: int) -> dict:
    """One page of the systems matching the filters, with the header's counts over all of them."""
    query, seen = visible(uow, actor, system_service.filtered(uow, actor, now, filters), now)
    total = sum(kind.count for kind in seen)
    available = sum(kind.count for kind in seen if kind.condition in USABLE and not kind.held)
    if group is None:  # paged in SQL: no row for the systems not shown
        shown, page, pages = page_of(uow, query, total, page, per_page)
        key = None
    else:  # sorted by a group computed in Python: every row, but plain ones
        rows = all_rows(uow, query)
        key = group_of(group, uow, holders(uow, now) if group == "holder" else {})
        rows.sort(key=lambda row: (key(row), row.fqdn))
        pages = max(1, -(-total // per_page))
        page = min(max(1, page), pages)
        shown = rows[(page - 1) * per_page: page * per_page]
    by_id = {s.id: s for s in uow.session.execute(select(System).where(System.id.in_([r.id for r in shown])).options(
        selectinload(System.pools), selectinload(System.owner), selectinload(System.policy_pool))).unique().scalars()}
    systems = [by_id[row.id] for row in shown]
    changed = since(uow, [s.id for s in systems])
    described = system_service.describe_many(uow, systems, now)
    for row, system, out in zip(shown, systems, described):
        out["usage_since"] = changed.get((system.id, "usage"), system.created_at)
        out["condition_since"] = changed.get((system.id, "condition"), system.created_at)
        out["group"] = key(row) if key else None
    return {"rows": described, "total": total, "page": page, "pages": pages, "available": available,
            "queued": queued_count(uow)}


def system_page(uow, actor: Actor, now: datetime, fqdn: str) -> dict:
    system = system_service.find(uow, fqdn, actor)
    loan = system_service.active_loan(uow, system)
    access = system_service.access_of(system, loan)
    current = system_service.current_reservations(uow, [system.id], now).get(system.id)
    holding = Holding(current.user.name, current.end_at, current.user_id == actor.id) if current else Holding()
    may_borrow = bool(decide(actor, Permission.LOAN_SELF, access) or decide(actor, Permission.LOAN_ANY, access))
    action = primary_action(decide(actor, Permission.RESERVE, access), may_borrow, holding,
                            loan.recipient.name if loan else None)
    changed = since(uow, [system.id])
    statuses = uow.session.execute(select(Recipe.status)
                               .where(Recipe.system_id == system.id, Recipe.finished_at.is_not(None))
                               .order_by(Recipe.finished_at.desc()).limit(RECENT_RECIPES)).scalars()
    return {
        "system": system_service.describe(uow, system, now),
        "usage_since": changed.get((system.id, "usage"), system.created_at),
        "condition_since": changed.get((system.id, "condition"), system.created_at),
        "action": action,
        "reservation_id": current.id if current is not None and holding.mine else None,
        "my_loan": loan is not None and loan.recipient_id == actor.id,
        "queued_could_use": queued_could_use(uow, system, loan),
        "aborted_share": aborted_share(list(statuses)),
        "history": activity.entries(uow, "system", system.fqdn, PageRequest(HISTORY_SHOWN)).items,
    }


def queued_could_use(uow, system: System, loan) -> int:
    """Queued recipes whose requirements this system meets and whose owner may run on it (Beaker's hint)."""
    if system.condition not in USABLE:
        return 0
    host, access = queries.host(system), system_service.access_of(system, loan)
    recipes = uow.session.execute(select(Recipe).where(Recipe.status == "queued").order_by(Recipe.id)
                              .limit(QUEUE_LOOKED_AT)).unique().scalars()
    owners: dict[int, Actor] = {}
    count = 0
    for recipe in recipes:
        job_owner = recipe.recipe_set.job.owner
        owner = owners.setdefault(job_owner.id, actor_for(uow, job_owner))
        if matches(recipe.spec.get("host_requires"), host) and decide_schedule(owner, access):
            count += 1
    return count


FEEDS = ("all", "available", "free", "mine", "removed")


def systems_for(uow, actor: Actor, now: datetime, which: str, filters: dict, system_type: str | None = None,
                host_filter: dict | None = None) -> list[str]:
    """The fqdns, sorted, of the systems the actor may view that match `filters` (systems.filtered's), the
    system type and a hostRequires tree, narrowed to `which` (Beaker's system lists, bkr system-list):
    all (not removed), removed, available (Automated or Manual and the actor may use it: reserve it, or have the
    scheduler give it to their recipes), free (available and nobody holds it), mine (owned, held or borrowed by
    the actor). Decided in SQL over columns (no ORM object per system: 10,000 of them took seconds); "may use" is
    domain.permissions.may_use, judged once per kind of system (`usable`). Only a hostRequires tree, which the
    scheduler's filters judge on a whole system, loads the systems left."""
    session = uow.session
    query, _ = visible(uow, actor, system_service.filtered(uow, actor, now, filters), now)
    query = query.where((System.condition == "removed") if which == "removed" else (System.condition != "removed"))
    if system_type:
        query = query.where(System.system_type == system_type)
    if which in ("available", "free"):
        query = usable(uow, actor, query.where(System.condition.in_(USABLE)))
    if which == "free":
        query = query.where(~held_now(now))
    if which == "mine":
        query = query.where(or_(System.owner_id == actor.id, exists().where(
            Reservation.system_id == System.id, Reservation.returned_at.is_(None), Reservation.start_at <= now,
            Reservation.user_id == actor.id), exists().where(
            Loan.system_id == System.id, Loan.returned_at.is_(None), Loan.recipient_id == actor.id)))
    if host_filter is None:
        return list(session.connection().execute(
            query.with_only_columns(System.fqdn).order_by(None).order_by(System.fqdn)).scalars())
    systems = session.execute(query.order_by(None).order_by(System.fqdn).options(
        selectinload(System.pools), selectinload(System.owner))).unique().scalars()
    return [system.fqdn for system in systems if matches(host_filter, queries.host(system, host_filter))]


def usable(uow, actor: Actor, query):
    """`query` narrowed to the systems the actor may use (domain.permissions.may_use), as `visible` narrows to
    what they may view: one grouped scan finds the kinds of system there are (owned by the actor or not, lent to
    nobody, to the actor or to another user, a reserve rule applies or not, its condition), may_use judges each
    kind once, and SQL keeps the systems of the kinds it allows."""
    session = uow.session
    owned = case((System.owner_id == actor.id, True), else_=False)
    lent = case((exists().where(Loan.system_id == System.id, Loan.returned_at.is_(None),
                                Loan.recipient_id == actor.id), "actor"),
                (exists().where(Loan.system_id == System.id, Loan.returned_at.is_(None)), "other"), else_="none")
    applies = false() if actor.is_admin else _view_rule_applies(session.connection(), actor, Permission.RESERVE)
    kinds = query.with_only_columns(System.id.label("id"), owned.label("owned"), lent.label("lent"),
                                    applies.label("applies"), System.condition.label("condition")
                                    ).order_by(None).subquery()
    found = session.connection().execute(select(kinds.c.owned, kinds.c.lent, kinds.c.applies, kinds.c.condition)
                                         .distinct()).all()
    recipient = {"none": None, "actor": actor.id, "other": actor.id + 1}  # "other": anybody but the actor
    allowed = [(bool(mine), lent_to, bool(applied), condition) for mine, lent_to, applied, condition in found
               if may_use(actor, SystemAccess(
                   owner_id=actor.id if mine else None, condition=condition,
                   rules=(Rule(Permission.RESERVE, actor.id),) if applied else (),
                   loan_recipient_id=recipient[lent_to]))]
    # The kinds' columns are computed once, in the subquery, and matched there: repeating their correlated
    # EXISTS inside an OR of the outer WHERE took PostgreSQL 20 times as long as the scan itself.
    return query.where(System.id.in_(select(kinds.c.id).where(or_(false(), *(
        and_(kinds.c.owned == mine, kinds.c.lent == lent_to, kinds.c.applies == applied,
             kinds.c.condition == condition) for mine, lent_to, applied, condition in allowed)))))
