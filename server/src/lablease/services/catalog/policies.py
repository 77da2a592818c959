"""Access policies: rules on a system, or on a pool for the systems that use the pool's policy."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from ...domain.errors import Invalid, NotFound
from ...domain.events import SystemChanged
from ...domain.permissions import Actor, Permission
from ...store.tables import AccessRule, Group, PoolAccessRule, System, User
from ..people.groups import find_group, find_user_field
from ..records import activity
from . import pools
from . import systems as system_service


def _rule_dict(uow, rule) -> dict:
    session = uow.session
    user = session.get(User, rule.user_id) if rule.user_id else None
    group = session.get(Group, rule.group_id) if rule.group_id else None
    return {"id": rule.id, "permission": rule.permission, "user": user.name if user else None,
            "group": group.name if group else None, "everybody": user is None and group is None}


def _describe(rule: dict) -> str:
    who = f"user {rule['user']}" if rule["user"] else f"group {rule['group']}" if rule["group"] else "everybody"
    return f"{rule['permission']} to {who}"


def _parse_rule(uow, data: dict) -> dict:
    try:
        permission = Permission(data.get("permission"))
    except ValueError:
        raise Invalid("permission", "must be one of " + ", ".join(p.value for p in Permission)) from None
    targets = [key for key in ("user", "group") if data.get(key)] + (["everybody"] if data.get("everybody") else [])
    if len(targets) != 1:
        raise Invalid("user", "name exactly one of user, group or everybody: true")
    values = {"permission": permission.value, "user_id": None, "group_id": None}
    if data.get("user"):
        values["user_id"] = find_user_field(uow, data["user"]).id
    if data.get("group"):
        values["group_id"] = find_group(uow, data["group"]).id
    return values


def system_policy(uow, actor: Actor, fqdn: str) -> dict:
    system = system_service.find(uow, fqdn, actor)
    return {"system": system.fqdn, "use_pool_policy": system.policy_pool.name if system.policy_pool else None,
            "rules": [_rule_dict(uow, rule) for rule in sorted(system.rules, key=lambda r: r.id)]}


def _editable_system(uow, actor: Actor, fqdn: str):
    system = system_service.find(uow, fqdn, actor)
    system_service.require(uow, actor, Permission.EDIT_POLICY, system)
    return system


def _add(uow, rules: list, rule_class, data: dict) -> tuple[dict, bool]:
    """Add a rule to a policy's list unless an equal one is there; (the rule, whether it is new)."""
    values = _parse_rule(uow, data)
    existing = next((r for r in rules if (r.permission, r.user_id, r.group_id) ==
                     (values["permission"], values["user_id"], values["group_id"])), None)
    if existing is not None:
        return _rule_dict(uow, existing), False
    rule = rule_class(**values)
    rules.append(rule)
    uow.session.flush()
    return _rule_dict(uow, rule), True


def _remove(uow, rules: list, rule_id: int, owner: str) -> dict:
    rule = next((r for r in rules if r.id == rule_id), None)
    if rule is None:
        raise NotFound(f"{owner} has no access rule {rule_id}")
    shown = _rule_dict(uow, rule)
    rules.remove(rule)
    return shown


def add_system_rule(uow, actor: Actor, now: datetime, fqdn: str, data: dict, force: bool | None = None) -> dict:
    system = _editable_system(uow, actor, fqdn)
    shown, created = _add(uow, system.rules, AccessRule, data)
    if created:
        activity.record(uow, actor, now, "system", system.fqdn, "policy_changed", "rule", None, _describe(shown))
        uow.emit(SystemChanged(system.id, now, force))
    return shown


def remove_system_rule(uow, actor: Actor, now: datetime, fqdn: str, rule_id: int, force: bool | None = None) -> None:
    system = _editable_system(uow, actor, fqdn)
    shown = _remove(uow, system.rules, rule_id, system.fqdn)
    activity.record(uow, actor, now, "system", system.fqdn, "policy_changed", "rule", _describe(shown), None)
    uow.emit(SystemChanged(system.id, now, force))


def put_system_policy(uow, actor: Actor, now: datetime, fqdn: str, data: dict, force: bool | None = None) -> dict:
    """Replace the rules and/or choose to use a pool's policy instead."""
    session = uow.session
    system = _editable_system(uow, actor, fqdn)
    if "rules" in data:
        wanted = [_parse_rule(uow, rule) for rule in data["rules"]]
        for rule in list(system.rules):
            remove_system_rule(uow, actor, now, fqdn, rule.id, force)
        for values in wanted:
            system.rules.append(AccessRule(**values))
        session.flush()
        for rule in system.rules:
            activity.record(uow, actor, now, "system", system.fqdn, "policy_changed", "rule", None,
                            _describe(_rule_dict(uow, rule)))
    if "use_pool_policy" in data:
        _use_pool_policy(uow, actor, now, system, data["use_pool_policy"])
    session.flush()
    uow.emit(SystemChanged(system.id, now, force))
    return system_policy(uow, actor, fqdn)


def _use_pool_policy(uow, actor, now, system, name: str | None) -> None:
    old = system.policy_pool.name if system.policy_pool else None
    if name == old:
        return
    if name is None:
        system.policy_pool_id = None
        system.policy_pool = None
    else:
        try:
            pool = pools.find(uow, name)
        except NotFound:
            raise Invalid("use_pool_policy", f"no pool named {name}") from None
        pools.check_member(pool, system)
        system.policy_pool = pool
    activity.record(uow, actor, now, "system", system.fqdn, "changed", "access policy",
                    f"pool {old}" if old else "own rules", f"pool {name}" if name else "own rules")


def pool_policy(uow, name: str) -> dict:
    pool = pools.find(uow, name)
    return {"pool": pool.name, "rules": [_rule_dict(uow, r) for r in sorted(pool.rules, key=lambda r: r.id)]}


def _pool_policy_changed(uow, pool, now: datetime, force: bool | None) -> None:
    """Systems that use the pool's policy may now suit other waiting work."""
    for system_id in uow.session.execute(select(System.id).where(System.policy_pool_id == pool.id)).scalars():
        uow.emit(SystemChanged(system_id, now, force))


def add_pool_rule(uow, actor: Actor, now: datetime, name: str, data: dict, force: bool | None = None) -> dict:
    pool = pools.find(uow, name)
    pools.require_manager(actor, pool)
    shown, created = _add(uow, pool.rules, PoolAccessRule, data)
    if created:
        activity.record(uow, actor, now, "pool", pool.name, "policy_changed", "rule", None, _describe(shown))
        _pool_policy_changed(uow, pool, now, force)
    return shown


def remove_pool_rule(uow, actor: Actor, now: datetime, name: str, rule_id: int, force: bool | None = None) -> None:
    pool = pools.find(uow, name)
    pools.require_manager(actor, pool)
    shown = _remove(uow, pool.rules, rule_id, f"pool {name}")
    activity.record(uow, actor, now, "pool", pool.name, "policy_changed", "rule", _describe(shown), None)
    _pool_policy_changed(uow, pool, now, force)
