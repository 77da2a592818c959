"""/pools/...: bkr pool-list, pool-create, pool-add, pool-remove, pool-systems, pool-delete, and the pool side
of policy-grant/-revoke (methods/policies.py). A lablease pool is owned by a group (or by nobody: admins')."""
from __future__ import annotations

from ...domain.errors import Invalid
from ...services.catalog import pools
from ..call import Call
from ..registry import NotSupported, rest


def pool_document(pool: dict) -> dict:
    group = pool.get("owner_group")
    return {"name": pool["name"], "description": pool.get("description") or "",
            "owner": {"group_name": group} if group else None, "systems": pool.get("systems", [])}


@rest("GET", "/pools")
def pool_list(call: Call):
    """Beaker's search `owner.group_name:NAME` (bkr pool-list --owning-group); no pool is owned by a user."""
    found = pools.summaries(call.uow)
    wanted = call.query.get("q") or ""
    kind, _, name = wanted.partition(":")
    if kind == "owner.group_name":
        found = [pool for pool in found if pool["owner_group"] == name]
    elif kind == "owner.user_name":
        found = []  # lablease's pools belong to groups
    elif wanted:
        raise Invalid("q", "only owner.user_name:NAME and owner.group_name:NAME are understood")
    size = call.query.get("page_size", type=int)
    entries = [{**pool_document({**pool, "systems": []}), "id": pool["id"]} for pool in found]
    return {"entries": entries[:size] if size else entries, "count": len(entries)}


@rest("GET", "/pools/<name>")
def pool_show(call: Call, name: str):
    return pool_document(pools.show(call.uow, name))


@rest("POST", "/pools", fields={"name": str, "description": str, "owner": {"user_name": str, "group_name": str}})
def pool_create(call: Call):
    body = call.body or {}
    owner = body.get("owner") or {}
    if owner.get("user_name"):
        raise NotSupported("a lablease pool is owned by a group, not a user: use --owning-group")
    made = pools.create(call.uow, call.user, call.now, str(body.get("name") or ""), body.get("description"),
                        owner.get("group_name"))
    return pool_document(made)


@rest("POST", "/pools/<name>/systems", fields={"fqdn": str})
def pool_add(call: Call, name: str):
    pools.add_system(call.uow, call.user, call.now, name, str((call.body or {}).get("fqdn") or ""))
    return None


@rest("DELETE", "/pools/<name>/systems")
def pool_remove(call: Call, name: str):
    fqdn = call.query.get("fqdn")
    if not fqdn:
        raise Invalid("fqdn", "name the system to remove: ?fqdn=")
    pools.remove_system(call.uow, call.user, call.now, name, fqdn)
    return None


@rest("DELETE", "/pools/<name>")
def pool_delete(call: Call, name: str):
    pools.delete(call.uow, call.user, call.now, name)
    return None
