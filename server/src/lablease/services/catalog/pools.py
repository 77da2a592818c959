"""Pools: named sets of systems owned by a group."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import func, select

from ...domain.errors import Conflict, Forbidden, Invalid, NotFound
from ...domain.events import PoolFloorLowered, SystemChanged
from ...domain.holds import check_floor
from ...domain.paging import Page, PageRequest
from ...domain.permissions import Actor, may_manage_pool
from ...domain.references import check_unreferenced
from ...store import paging
from ...store.health_tables import HealthCheck
from ...store.paging import Order
from ...store.tables import Group, Pool, PoolSystem, System
from ..people.groups import find_group
from ..people.users import check_name
from ..records import activity
from . import health_state
from . import systems as system_service


def as_dict(pool: Pool) -> dict:
    return {
        "name": pool.name,
        "description": pool.description,
        "owner_group": pool.owner_group.name if pool.owner_group else None,
        "systems": [system.fqdn for system in pool.systems],
        "automation_floor": pool.automation_floor,
    }


def find(uow, name: str) -> Pool:
    pool = uow.session.execute(select(Pool).where(Pool.name == name)).unique().scalar_one_or_none()
    if pool is None:
        raise NotFound(f"no pool named {name}")
    return pool


def require_manager(actor: Actor, pool: Pool) -> None:
    decision = may_manage_pool(actor, pool.owner_group_id)
    if not decision:
        raise Forbidden(f"pool {pool.name}: {decision.reason}")


def create(uow, actor: Actor, now: datetime, name: str, description: str | None = None,
           owner_group: str | None = None, automation_floor: int = 0) -> dict:
    session = uow.session
    check_name(name, "name")
    if session.execute(select(Pool.id).where(Pool.name == name)).first():
        raise Conflict(f"pool {name} already exists")
    group = find_group(uow, owner_group, "owner_group") if owner_group else None
    if not actor.is_admin and (group is None or group.id not in actor.group_ids):
        raise Forbidden("a pool must be owned by a group you belong to (only admins may create pools without one)")
    pool = Pool(name=name, description=description, owner_group_id=group.id if group else None, created_at=now,
                automation_floor=check_floor(automation_floor))
    session.add(pool)
    session.flush()
    activity.record(uow, actor, now, "pool", name, "created", "owner_group", None, owner_group)
    return as_dict(pool)


def listing(uow, page: PageRequest) -> Page:
    found = paging.fetch(uow, "pools", select(Pool), [Order(Pool.name)], page)
    return Page([as_dict(pool) for pool in found.items], found.next_after)


def summaries(uow) -> list[dict]:
    """Every pool with its number of systems, without loading them (Pool.systems is eager)."""
    session = uow.session
    counts = dict(session.execute(select(PoolSystem.pool_id, func.count()).group_by(PoolSystem.pool_id)).all())
    rows = session.execute(select(Pool.id, Pool.name, Pool.description, Group.name)
                           .outerjoin(Group, Group.id == Pool.owner_group_id).order_by(Pool.name))
    return [{"id": pool_id, "name": name, "description": description, "owner_group": group,
             "systems": counts.get(pool_id, 0)}
            for pool_id, name, description, group in rows]


def summary(uow, name: str) -> dict:
    found = [p for p in summaries(uow) if p["name"] == name]
    if not found:
        raise NotFound(f"no pool named {name}")
    return found[0]


def show(uow, name: str) -> dict:
    return as_dict(find(uow, name))


def update(uow, actor: Actor, now: datetime, name: str, data: dict) -> dict:
    session = uow.session
    pool = find(uow, name)
    require_manager(actor, pool)
    if "description" in data and data["description"] != pool.description:
        activity.record(uow, actor, now, "pool", name, "changed", "description", pool.description,
                        data["description"])
        pool.description = data["description"]
    if "automation_floor" in data and data["automation_floor"] != pool.automation_floor:
        activity.record(uow, actor, now, "pool", name, "changed", "automation_floor", pool.automation_floor,
                        data["automation_floor"])
        floor = check_floor(data["automation_floor"])
        lowered, pool.automation_floor = floor < pool.automation_floor, floor
        if lowered:  # reservations waiting for one of its systems may be granted now (services/handlers.py)
            uow.emit(PoolFloorLowered(tuple(s.id for s in pool.systems), now))
    if "owner_group" in data:
        group = find_group(uow, data["owner_group"], "owner_group") if data["owner_group"] else None
        old = pool.owner_group.name if pool.owner_group else None
        if old != data["owner_group"]:
            activity.record(uow, actor, now, "pool", name, "changed", "owner_group", old, data["owner_group"])
            pool.owner_group_id = group.id if group else None
            session.flush()
            session.refresh(pool, ["owner_group"])
    return as_dict(pool)


def delete(uow, actor: Actor, now: datetime, name: str, force: bool = False) -> list[str]:
    """Delete a pool; while a health check runs on it or systems use its access policy, only when forced, which
    deletes those checks and gives those systems back their own rules. Returns what forcing changed."""
    session = uow.session
    pool = find(uow, name)
    require_manager(actor, pool)
    checks = list(session.execute(select(HealthCheck).where(HealthCheck.scope == "pool", HealthCheck.target == name)
                                  .order_by(HealthCheck.name)).unique().scalars())
    governed = list(session.execute(select(System).where(System.policy_pool_id == pool.id).order_by(System.fqdn))
                    .unique().scalars())
    check_unreferenced(f"pool {name}", [f"health check {check.name}" for check in checks] +
                       [f"{system.fqdn}, which uses its access policy" for system in governed], force,
                       "delete those checks and give those systems back their own access rules")
    for check in checks:
        session.delete(check)
        activity.record(uow, actor, now, "health_check", check.name, "deleted", "pool", name, None)
    for system in governed:
        _stop_using_policy(uow, actor, now, system, pool)
    for system in list(pool.systems):  # what its pools decide (requirements, advance reservations) changes
        system.pools.remove(pool)
        uow.emit(SystemChanged(system.id, now, force))
    session.delete(pool)
    activity.record(uow, actor, now, "pool", name, "deleted")
    if checks:
        session.flush()
        health_state.refresh_all(uow, now)
    return ([f"deleted health check {check.name}" for check in checks] +
            [f"{system.fqdn} uses its own access rules again" for system in governed])


def add_system(uow, actor: Actor, now: datetime, name: str, fqdn: str, force: bool | None = None) -> dict:
    session = uow.session
    pool = find(uow, name)
    require_manager(actor, pool)
    system = system_service.find(uow, fqdn, actor)
    if pool not in system.pools:
        system.pools.append(pool)
        activity.record(uow, actor, now, "pool", name, "system_added", "system", None, system.fqdn)
        activity.record(uow, actor, now, "system", system.fqdn, "changed", "pools", None, name)
        uow.emit(SystemChanged(system.id, now, force))
    session.flush()
    session.refresh(pool)
    return as_dict(pool)


def remove_system(uow, actor: Actor, now: datetime, name: str, fqdn: str, force: bool | None = None) -> None:
    pool = find(uow, name)
    require_manager(actor, pool)
    system = system_service.find(uow, fqdn, actor)
    if pool not in system.pools:
        raise NotFound(f"{system.fqdn} is not in pool {name}")
    if system.policy_pool_id == pool.id:
        _stop_using_policy(uow, actor, now, system, pool)
    system.pools.remove(pool)
    activity.record(uow, actor, now, "pool", name, "system_removed", "system", system.fqdn, None)
    activity.record(uow, actor, now, "system", system.fqdn, "changed", "pools", name, None)
    uow.emit(SystemChanged(system.id, now, force))


def _stop_using_policy(uow, actor, now, system: System, pool: Pool) -> None:
    """A system leaving a pool whose policy it used falls back to its own rules."""
    system.policy_pool_id = None
    system.policy_pool = None
    activity.record(uow, actor, now, "system", system.fqdn, "changed", "access policy", f"pool {pool.name}",
                    "own rules")


def check_member(pool: Pool, system: System) -> None:
    if pool not in system.pools:
        raise Invalid("use_pool_policy", f"{system.fqdn} is not in pool {pool.name}")
