"""/systems/<fqdn>/access-policy, /systems/<fqdn>/active-access-policy, /pools/<name>/access-policy:
bkr policy-list, policy-grant and policy-revoke. Beaker's permissions are lablease's, by the same names."""
from __future__ import annotations

from ...domain.errors import Invalid
from ...services.catalog import policies
from ...services.people import users
from ..call import Call
from ..registry import rest


def listed(call: Call, policy: dict) -> dict:
    """The rules bkr policy-list asks for: --mine (those that give the caller something), --user, --group."""
    rules = policy["rules"]
    if call.query.get("mine"):
        mine = set(users.whoami(call.uow, call.user)["groups"])
        rules = [r for r in rules if r["everybody"] or r["user"] == call.user.name or r["group"] in mine]
    elif call.query.getlist("user"):
        rules = [r for r in rules if r["user"] in call.query.getlist("user")]
    elif call.query.getlist("group"):
        rules = [r for r in rules if r["group"] in call.query.getlist("group")]
    return {"id": None, "rules": [dict(r) for r in rules]}


@rest("GET", "/systems/<fqdn>/access-policy")
def custom_policy(call: Call, fqdn: str):
    return listed(call, policies.system_policy(call.uow, call.user, fqdn))


@rest("GET", "/systems/<fqdn>/active-access-policy")
def active_policy(call: Call, fqdn: str):
    """The rules that decide now: the pool's, when the system uses its pool's policy."""
    own = policies.system_policy(call.uow, call.user, fqdn)
    if own["use_pool_policy"]:
        return listed(call, policies.pool_policy(call.uow, own["use_pool_policy"]))
    return listed(call, own)


@rest("GET", "/pools/<name>/access-policy")
def pool_policy(call: Call, name: str):
    return listed(call, policies.pool_policy(call.uow, name))


RULE = {"permission": str, "user": str, "group": str, "everybody": bool}  # what rule_of reads


def rule_of(body) -> dict:
    body = body or {}
    return {"permission": body.get("permission"), "user": body.get("user"), "group": body.get("group"),
            "everybody": bool(body.get("everybody"))}


@rest("POST", "/systems/<fqdn>/access-policy/rules", fields=RULE)
def system_grant(call: Call, fqdn: str):
    return policies.add_system_rule(call.uow, call.user, call.now, fqdn, rule_of(call.body))


@rest("POST", "/pools/<name>/access-policy/rules", fields=RULE)
def pool_grant(call: Call, name: str):
    return policies.add_pool_rule(call.uow, call.user, call.now, name, rule_of(call.body))


def revoked(call: Call, rules: list[dict]) -> list[int]:
    """The ids of the rules a DELETE's query names: ?permission=...&user=... (or group=, or everybody=1)."""
    permissions = call.query.getlist("permission")
    if not permissions:
        raise Invalid("permission", "name the permissions to revoke: ?permission=")
    who = [("user", name) for name in call.query.getlist("user")] + \
          [("group", name) for name in call.query.getlist("group")]
    everybody = call.query.get("everybody") in ("1", "true", "True")
    if not who and not everybody:
        raise Invalid("user", "name the users or groups to revoke from (?user=, ?group=), or ?everybody=1")
    return [r["id"] for r in rules if r["permission"] in permissions
            and (any(r[kind] == name for kind, name in who) or (everybody and r["everybody"]))]


@rest("DELETE", "/systems/<fqdn>/access-policy/rules")
def system_revoke(call: Call, fqdn: str):
    for rule_id in revoked(call, policies.system_policy(call.uow, call.user, fqdn)["rules"]):
        policies.remove_system_rule(call.uow, call.user, call.now, fqdn, rule_id)
    return None


@rest("DELETE", "/pools/<name>/access-policy/rules")
def pool_revoke(call: Call, name: str):
    for rule_id in revoked(call, policies.pool_policy(call.uow, name)["rules"]):
        policies.remove_pool_rule(call.uow, call.user, call.now, name, rule_id)
    return None
