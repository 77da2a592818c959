"""What the web's systems list and a system's page show, read in a few queries (the rules stay in domain/).

The listing shares its filters and visibility with the API's (systems.filtered, systems.visible_systems);
it adds the counts of the header, grouping, paging, and each state's "since".
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select

from ..domain.actions import Holding, aborted_share, primary_action
from ..domain.permissions import Actor, Permission, decide, decide_schedule
from ..scheduler.filters import matches
from ..store.tables import Recipe, Reservation, System, UsageChange, User
from . import activity, scheduling
from . import systems as system_service
from .users import actor_for

GROUPS = {
    "pool": lambda system, holder: ", ".join(sorted(p.name for p in system.pools)) or "(no pool)",
    "condition": lambda system, holder: system.condition,
    "holder": lambda system, holder: holder or "(free)",
}
USABLE = ("automated", "manual")
RECENT_RECIPES = 20  # a system's health: the share of its last recipes that were aborted
QUEUE_LOOKED_AT = 500  # "N queued recipes could use it" looks at the oldest this many


def holders(session, now: datetime) -> dict[int, tuple[str, datetime | None]]:
    """System id -> (holder's name, end) of every reservation in force now: one query for all systems."""
    rows = session.execute(select(Reservation.system_id, User.name, Reservation.end_at)
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


def systems_page(uow, actor: Actor, now: datetime, filters: dict, group: str | None, page: int,
                 per_page: int) -> dict:
    session = uow.session
    systems = system_service.visible_systems(session, actor, system_service.filtered(session, actor, now, filters))
    held = holders(session, now)
    key = GROUPS.get(group or "")
    if key is not None:
        systems.sort(key=lambda s: (key(s, held.get(s.id, (None,))[0]), s.fqdn))
    pages = max(1, -(-len(systems) // per_page))
    page = min(max(1, page), pages)
    shown = systems[(page - 1) * per_page: page * per_page]
    changed = since(session, [s.id for s in shown])
    rows = []
    for system, described in zip(shown, system_service.describe_many(session, shown, now)):
        described["usage_since"] = changed.get((system.id, "usage"), system.created_at)
        described["condition_since"] = changed.get((system.id, "condition"), system.created_at)
        described["group"] = key(system, held.get(system.id, (None,))[0]) if key else None
        rows.append(described)
    return {"rows": rows, "total": len(systems), "page": page, "pages": pages,
            "available": sum(1 for s in systems if s.condition in USABLE and s.id not in held),
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
    statuses = session.execute(select(Recipe.status).where(Recipe.system_id == system.id, Recipe.finished_at.is_not(None))
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
        "history": activity.entries(session, "system", system.fqdn, 50),
    }


def queued_could_use(session, system: System, loan) -> int:
    """Queued recipes whose requirements this system meets and whose owner may run on it (Beaker's hint)."""
    if system.condition not in USABLE:
        return 0
    host, access = scheduling.host(system), system_service.access_of(system, loan)
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
