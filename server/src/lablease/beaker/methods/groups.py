"""/groups/...: bkr group-list, group-create, group-members, group-modify. lablease's groups have a name, a
description, members and owners; Beaker's display names, root passwords, renames and LDAP groups are refused."""
from __future__ import annotations

from ...domain.errors import Invalid
from ...domain.paging import PageRequest
from ...services.people import groups
from ...services.people.users import find_user
from ..call import Call
from ..registry import NotSupported, rest


def every_group(call: Call) -> list[dict]:
    found, after = [], None
    while True:
        page = groups.listing(call.uow, call.user, PageRequest(after=after, limit=PageRequest().limit))
        found += page.items
        if not page.next_after:
            return found
        after = page.next_after


def person(call: Call, name: str) -> dict:
    """A member as Beaker shows one; e-mail addresses only to signed-in users (bkr group-members logs in to
    nothing, so anyone reaching /bkr may ask)."""
    user = find_user(call.uow, name)
    return {"user_name": user.name, "display_name": user.name,
            "email_address": (user.email or "") if call.actor is not None else ""}


def group_document(call: Call, group: dict, with_members: bool = True) -> dict:
    out = {"group_name": group["name"], "display_name": group["name"], "description": group["description"] or ""}
    if with_members:
        out["members"] = [person(call, name) for name in group["members"]]
        out["owners"] = [person(call, name) for name in group["owners"]]
    return out


@rest("GET", "/groups")
def group_list(call: Call):
    found = every_group(call)
    wanted = call.query.get("q") or ""
    kind, _, name = wanted.partition(":")
    if kind == "owner.user_name":
        found = [group for group in found if name in group["owners"]]
    elif wanted:
        raise Invalid("q", "only owner.user_name:NAME is understood")
    size = call.query.get("page_size", type=int)
    entries = [group_document(call, group, with_members=False) for group in found]
    return {"entries": entries[:size] if size else entries, "count": len(entries)}


@rest("GET", "/groups/<name>", auth=False)
def group_show(call: Call, name: str):
    return group_document(call, groups.show(call.uow, call.reader, name))


# what group_create and group_modify read of a body
GROUP = {"group_name": str, "description": str, "display_name": str, "ldap": bool, "root_password": str}


def refuse_beaker_only(body: dict, name: str) -> None:
    if body.get("ldap"):
        raise NotSupported("LDAP groups are not supported: lablease's groups are its own")
    if body.get("root_password"):
        raise NotSupported("a group root password is not supported: lablease's kickstarts take root's password "
                           "from ks_meta")
    if body.get("display_name") not in (None, "", name):
        raise NotSupported("a display name is not supported: a lablease group is known by its name")


@rest("POST", "/groups", fields=GROUP)
def group_create(call: Call):
    body = call.body or {}
    name = str(body.get("group_name") or "")
    refuse_beaker_only(body, name)
    return group_document(call, groups.create(call.uow, call.user, call.now, name, body.get("description")))


@rest("PATCH", "/groups/<name>", fields=GROUP)
def group_modify(call: Call, name: str):
    body = call.body or {}
    if body.get("group_name") not in (None, name):
        raise NotSupported("renaming a group is not supported: create a new group and move its members")
    refuse_beaker_only(body, name)
    changes = {"description": body["description"]} if "description" in body else {}
    return group_document(call, groups.update(call.uow, call.user, call.now, name, changes))


def user_named(call: Call) -> str:
    name = (call.body or {}).get("user_name") if call.body is not None else call.query.get("user_name")
    if not name:
        raise Invalid("user_name", "name the user")
    return str(name)


@rest("POST", "/groups/<name>/members", fields={"user_name": str})
def member_add(call: Call, name: str):
    groups.add_member(call.uow, call.user, call.now, name, user_named(call))
    return None


@rest("DELETE", "/groups/<name>/members")
def member_remove(call: Call, name: str):
    groups.remove_member(call.uow, call.user, call.now, name, user_named(call))
    return None


@rest("POST", "/groups/<name>/owners", fields={"user_name": str})
def owner_grant(call: Call, name: str):
    groups.add_member(call.uow, call.user, call.now, name, user_named(call), owner=True)
    return None


@rest("DELETE", "/groups/<name>/owners")
def owner_revoke(call: Call, name: str):
    """An owner stays a member, as in Beaker."""
    user = user_named(call)
    if user not in groups.show(call.uow, call.user, name)["owners"]:
        raise Invalid("user_name", f"{user} is not an owner of {name}")
    groups.add_member(call.uow, call.user, call.now, name, user, owner=False)
    return None
