"""Access policies: rules on a system, or on a pool for the systems that use the pool's policy."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from ..domain.errors import Invalid, NotFound
from ..domain.permissions import Actor, Permission
from ..store.tables import AccessRule, Group, PoolAccessRule, User
from . import activity, pools
from ..store.uow import emit
from . import systems as system_service
from .groups import find_group, find_user_field


def _rule_dict(session, rule) -> dict:
    user = session.get(User, rule.user_id) if rule.user_id else None
    group = session.get(Group, rule.group_id) if rule.group_id else None
    return {"id": rule.id, "permission": rule.permission, "user": user.name if user else None,
            "group": group.name if group else None, "everybody": user is None and group is None}


def _describe(rule: dict) -> str:
    who = f"user {rule['user']}" if rule["user"] else f"group {rule['group']}" if rule["group"] else "everybody"
    return f"{rule['permission']} to {who}"


def _parse_rule(session, data: dict) -> dict:
    try:
        permission = Permission(data.get("permission"))
    except ValueError:
        raise Invalid("permission", "must be one of " + ", ".join(p.value for p in Permission)) from None
    targets = [key for key in ("user", "group") if data.get(key)] + (["everybody"] if data.get("everybody") else [])
    if len(targets) != 1:
        raise Invalid("user", "name exactly one of user, group or everybody: true")
    values = {"permission": permission.value, "user_id": None, "group_id": None}
    if data.get("user"):
        values["user_id"] = find_user_field(session, data["user"]).id
    if data.get("group"):
        values["group_id"] = find_group(session, data["group"]).id
    return values


def system_policy(uow, actor: Actor, fqdn: str) -> dict:
    session = uow.session
    system = system_service.find(session, fqdn, actor)
    return {"system": system.fqdn, "use_pool_policy": system.policy_pool.name if system.policy_pool else None,
            "rules": [_rule_dict(session, rule) for rule in sorted(system.rules, key=lambda r: r.id)]}


def _editable_system(session, actor: Actor, fqdn: str):
    system = system_service.find(session, fqdn, actor)
    system_service.require(session, actor, Permission.EDIT_POLICY, system)
    return system


def add_system_rule(uow, actor: Actor, now: datetime, fqdn: str, data: dict) -> dict:
    session = uow.session
    system = _editable_system(session, actor, fqdn)
    values = _parse_rule(session, data)
    existing = next((r for r in system.rules if (r.permission, r.user_id, r.group_id) ==
                     (values["permission"], values["user_id"], values["group_id"])), None)
    if existing is not None:
        return _rule_dict(session, existing)
    rule = AccessRule(**values)
    system.rules.append(rule)
    session.flush()
    shown = _rule_dict(session, rule)
    activity.record(session, actor, now, "system", system.fqdn, "policy_changed", "rule", None, _describe(shown))
    emit(session, "system_changed", (system.id, now))
    return shown


def remove_system_rule(uow, actor: Actor, now: datetime, fqdn: str, rule_id: int) -> None:
    session = uow.session
    system = _editable_system(session, actor, fqdn)
    rule = next((r for r in system.rules if r.id == rule_id), None)
    if rule is None:
        raise NotFound(f"{system.fqdn} has no access rule {rule_id}")
    shown = _rule_dict(session, rule)
    system.rules.remove(rule)
    activity.record(session, actor, now, "system", system.fqdn, "policy_changed", "rule", _describe(shown), None)
    emit(session, "system_changed", (system.id, now))


def put_system_policy(uow, actor: Actor, now: datetime, fqdn: str, data: dict) -> dict:
    """Replace the rules and/or choose to use a pool's policy instead."""
    session = uow.session
    system = _editable_system(session, actor, fqdn)
    if "rules" in data:
        wanted = [_parse_rule(session, rule) for rule in data["rules"]]
        for rule in list(system.rules):
            remove_system_rule(uow, actor, now, fqdn, rule.id)
        for values in wanted:
            system.rules.append(AccessRule(**values))
        session.flush()
        for rule in system.rules:
            activity.record(session, actor, now, "system", system.fqdn, "policy_changed", "rule", None,
                            _describe(_rule_dict(session, rule)))
    if "use_pool_policy" in data:
        _use_pool_policy(session, actor, now, system, data["use_pool_policy"])
    session.flush()
    emit(session, "system_changed", (system.id, now))
    return system_policy(uow, actor, fqdn)


def _use_pool_policy(session, actor, now, system, name: str | None) -> None:
    old = system.policy_pool.name if system.policy_pool else None
    if name == old:
        return
    if name is None:
        system.policy_pool_id = None
        system.policy_pool = None
    else:
        try:
            pool = pools.find(session, name)
        except NotFound:
            raise Invalid("use_pool_policy", f"no pool named {name}") from None
        pools.check_member(pool, system)
        system.policy_pool = pool
    activity.record(session, actor, now, "system", system.fqdn, "changed", "access policy",
                    f"pool {old}" if old else "own rules", f"pool {name}" if name else "own rules")


def pool_policy(uow, name: str) -> dict:
    pool = pools.find(uow.session, name)
    return {"pool": pool.name, "rules": [_rule_dict(uow.session, r) for r in sorted(pool.rules, key=lambda r: r.id)]}


def add_pool_rule(uow, actor: Actor, now: datetime, name: str, data: dict) -> dict:
    session = uow.session
    pool = pools.find(session, name)
    pools.require_manager(actor, pool)
    values = _parse_rule(session, data)
    existing = next((r for r in pool.rules if (r.permission, r.user_id, r.group_id) ==
                     (values["permission"], values["user_id"], values["group_id"])), None)
    if existing is not None:
        return _rule_dict(session, existing)
    rule = PoolAccessRule(**values)
    pool.rules.append(rule)
    session.flush()
    shown = _rule_dict(session, rule)
    activity.record(session, actor, now, "pool", pool.name, "policy_changed", "rule", None, _describe(shown))
    return shown


def remove_pool_rule(uow, actor: Actor, now: datetime, name: str, rule_id: int) -> None:
    session = uow.session
    pool = pools.find(session, name)
    pools.require_manager(actor, pool)
    rule = next((r for r in pool.rules if r.id == rule_id), None)
    if rule is None:
        raise NotFound(f"pool {name} has no access rule {rule_id}")
    shown = _rule_dict(session, rule)
    pool.rules.remove(rule)
    activity.record(session, actor, now, "pool", pool.name, "policy_changed", "rule", _describe(shown), None)

