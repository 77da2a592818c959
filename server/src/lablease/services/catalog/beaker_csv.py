"""Beaker's CSV exchange against the database: what the rows find, what they change, what an export holds.

The rows are read and mapped in domain/beaker_csv.py; here the systems go through the system import use case
(systems.import_systems: add_system or update_system, with their checks, events and consequences) and the
memberships through the pool and group use cases, each row in its own step so that every refused row is
named; the caller commits only when none is.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.orm import selectinload

from ...domain import beaker_csv as rules
from ...domain.errors import DomainError
from ...domain.permissions import Actor
from ...store.tables import Group, GroupMember, Pool, System, User
from ..people import groups
from . import pools, systems
from .inventory import inventory_of


def current(uow, fqdns: set[str]) -> dict[str, dict]:
    """Each named system lablease has: {"attributes", "netboot"} by fqdn (what key/value and MAC rows change)."""
    if not fqdns:
        return {}
    found = uow.session.execute(select(System.fqdn, System.attributes, System.netboot)
                            .where(System.fqdn.in_(sorted(fqdns)))).all()
    return {row.fqdn: {"attributes": row.attributes or {}, "netboot": row.netboot or {}} for row in found}


def apply(uow, actor: Actor, now: datetime, plan: rules.Plan, entries: list[tuple[int, dict]],
          rows: list[rules.Row], refused: list) -> dict:
    """The plan's systems (entries: (index, checked body), `rows[index]` the row each is reported by) and
    memberships: {"added", "updated", "pools", "groups"}; each refused row is added to `refused` (which holds
    those refused before, e.g. by the API's schema)."""
    result = systems.import_systems(uow, actor, now, entries)
    refused += [(rows[index], why) for index, why in result["refused"].items()]
    # a refused import adds no system: the memberships of its systems would only repeat that
    skip = set(plan.systems) if refused else set()
    changed_pools = _memberships(uow, plan.pools, refused, skip, lambda pool, fqdn, deleted: _pool_member(
        uow, actor, now, pool, fqdn, deleted))
    changed_groups = _memberships(uow, plan.groups, refused, set(), lambda group, user, deleted: _group_member(
        uow, actor, now, group, user, deleted))
    return {"added": result["added"], "updated": result["updated"], "pools": changed_pools,
            "groups": changed_groups}


def _memberships(uow, wanted: list, refused: list, skip: set, change) -> int:
    """Each (row, name, member, deleted) in its own step; a refused one is added to `refused`. Rows of systems
    the import refused are skipped: their system's own row says why."""
    changed = 0
    for row, name, member, deleted in wanted:
        if member in skip:
            continue
        try:
            with uow.step():
                changed += change(name, member, deleted)
        except DomainError as error:
            refused.append((row, error.detail))
    return changed


def _pool_member(uow, actor: Actor, now: datetime, name: str, fqdn: str, deleted: bool) -> int:
    """Beaker refuses a pool it lacks; a lab moving in has none yet, so it is made (owned by administrators)."""
    pool = uow.session.execute(select(Pool).where(Pool.name == name)).scalar_one_or_none()
    if pool is None:
        if deleted:
            return 0
        pools.create(uow, actor, now, name, "imported from Beaker's CSV")
    member = uow.session.execute(select(System.id).join(System.pools).where(
        System.fqdn == fqdn, Pool.name == name)).first() is not None
    return _toggle(member, deleted, lambda: pools.add_system(uow, actor, now, name, fqdn),
                   lambda: pools.remove_system(uow, actor, now, name, fqdn))


def _group_member(uow, actor: Actor, now: datetime, name: str, user: str, deleted: bool) -> int:
    """As Beaker: the user must exist, the group is made when missing (by the server, so owned by nobody)."""
    session = uow.session
    groups.find_user_field(uow, user)
    group = session.execute(select(Group).where(Group.name == name)).scalar_one_or_none()
    if group is None:
        if deleted:
            return 0
        groups.create(uow, actor, now, name, "imported from Beaker's CSV")
        group = session.execute(select(Group).where(Group.name == name)).scalar_one()
    member = session.execute(select(GroupMember).join(User, User.id == GroupMember.user_id).where(
        GroupMember.group_id == group.id, User.name == user)).first() is not None
    return _toggle(member, deleted, lambda: groups.add_member(uow, actor, now, name, user),
                   lambda: groups.remove_member(uow, actor, now, name, user))


def _toggle(member: bool, deleted: bool, add, remove) -> int:
    """Add the member, or take it away when the row says deleted (as Beaker: either only when it changes
    something); 1 when it did."""
    if member != deleted:
        return 0
    (remove if deleted else add)()
    return 1


def export(uow) -> tuple[dict[str, list[dict]], list[str]]:
    """Beaker's rows of every kind lablease has data for, and a note for each thing no Beaker row can hold.
    Guest systems (a guest recipe's virtual machines, made and ended with their recipe) are not exported."""
    session = uow.session
    tables: dict[str, list[dict]] = {kind: [] for kind in rules.EXPORTED}
    notes = []
    found = session.execute(select(System).where(System.guest.is_(False)).order_by(System.fqdn)
                            .options(selectinload(System.owner), selectinload(System.pools))).scalars()
    for system in found:
        tables["system"].append(rules.system_row({
            "fqdn": system.fqdn, "arch": system.arch, "memory_mb": system.memory_mb, "lab": system.lab,
            "owner": system.owner.name if system.owner else None, "condition": system.condition,
            "netboot": system.netboot, "inventory": inventory_of(system, hardware=False)}))
        if system.power:
            row = rules.power_row(system.fqdn, system.power)
            if row is None:
                notes.append(f"{system.fqdn}'s power (driver {system.power.get('driver')}): Beaker has no power "
                             "type that does its work; not exported")
            else:
                tables["power"].append(row)
        tables["keyvalue"] += rules.keyvalue_rows(system.fqdn, system.attributes)
        tables["system_pool"] += [{"fqdn": system.fqdn, "pool": pool.name, "deleted": "False"}
                                  for pool in system.pools]
    members = session.execute(select(User.name, Group.name).join(GroupMember, GroupMember.user_id == User.id)
                              .join(Group, Group.id == GroupMember.group_id).order_by(User.name, Group.name)).all()
    tables["user_group"] = [{"user": user, "group": group, "deleted": "False"} for user, group in members]
    return tables, notes
