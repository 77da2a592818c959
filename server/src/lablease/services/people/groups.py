"""Groups with owners and members; the caller's notification settings."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from ...domain.errors import Conflict, Forbidden, Invalid, NotFound
from ...domain.events import SystemChanged
from ...domain.paging import Page, PageRequest
from ...domain.permissions import Actor
from ...domain.references import check_unreferenced
from ...store import paging
from ...store.paging import Order
from ...store.tables import AccessRule, Group, GroupMember, Pool, PoolAccessRule, System, User
from ..messages import destinations
from ..records import activity
from .users import check_hand_edited, check_name, find_user


def _find(uow, name: str) -> Group:
    group = uow.session.execute(select(Group).where(Group.name == name)).scalar_one_or_none()
    if group is None:
        raise NotFound(f"no group named {name}")
    return group


def find_group(uow, name: str, field: str = "group") -> Group:
    """A group named in some input: unknown is a 422 naming the field."""
    group = uow.session.execute(select(Group).where(Group.name == name)).scalar_one_or_none()
    if group is None:
        raise Invalid(field, f"no group named {name}")
    return group


def _members(uow, group: Group) -> list[tuple[User, bool]]:
    rows = uow.session.execute(select(User, GroupMember.is_owner).join(GroupMember, GroupMember.user_id == User.id)
                           .where(GroupMember.group_id == group.id).order_by(User.name))
    return list(rows)


def as_dict(uow, group: Group, actor: Actor) -> dict:
    """A group; its webhook only for its owners and admins (a URL often carries a chat room's key)."""
    members = _members(uow, group)
    out = {
        "name": group.name,
        "description": group.description,
        "owners": [user.name for user, owner in members if owner],
        "members": [user.name for user, _ in members],
    }
    if actor.is_admin or any(user.id == actor.id and owner for user, owner in members):
        out["webhook_url"] = group.webhook_url
    return out


def is_owner(uow, actor: Actor, group: Group) -> bool:
    if actor.is_admin:
        return True
    row = uow.session.get(GroupMember, (group.id, actor.id))
    return row is not None and row.is_owner


def _require_owner(uow, actor: Actor, group: Group) -> None:
    if not is_owner(uow, actor, group):
        raise Forbidden(f"only owners of group {group.name} (or admins) may change it")


def create(uow, actor: Actor, now: datetime, name: str, description: str | None = None,
           members: list[str] = (), owners: list[str] = ()) -> dict:
    """Any user may create a group; its creator owns it."""
    session = uow.session
    check_name(name)
    if session.execute(select(Group.id).where(Group.name == name)).first():
        raise Conflict(f"group {name} already exists")
    group = Group(name=name, description=description, created_at=now)
    session.add(group)
    session.flush()
    wanted = {user: False for user in members} | {user: True for user in owners}
    if actor.id:  # the creator owns the group (the server's own commands are not a user)
        wanted[actor.name] = True
    for user_name, owner in wanted.items():
        session.add(GroupMember(group_id=group.id, user_id=find_user_field(uow, user_name).id, is_owner=owner))
    activity.record(uow, actor, now, "group", name, "created")
    session.flush()
    return as_dict(uow, group, actor)


def find_user_field(uow, name: str, field: str = "user") -> User:
    user = uow.session.execute(select(User).where(User.name == name)).scalar_one_or_none()
    if user is None:
        raise Invalid(field, f"no user named {name}")
    return user


def listing(uow, actor: Actor, page: PageRequest) -> Page:
    found = paging.fetch(uow, "groups", select(Group), [Order(Group.name)], page)
    return Page([as_dict(uow, group, actor) for group in found.items], found.next_after)


def show(uow, actor: Actor, name: str) -> dict:
    return as_dict(uow, _find(uow, name), actor)


def update(uow, actor: Actor, now: datetime, name: str, data: dict) -> dict:
    group = _find(uow, name)
    _require_owner(uow, actor, group)
    destinations.check_url(uow.settings, data.get("webhook_url"))
    for key in ("description", "webhook_url", "webhook_secret"):
        if key in data and getattr(group, key) != data[key]:
            shown = "(secret)" if key == "webhook_secret" else data[key]
            activity.record(uow, actor, now, "group", name, "changed", key, None, shown)
            setattr(group, key, data[key])
    return as_dict(uow, group, actor)


def add_member(uow, actor: Actor, now: datetime, name: str, user: str, owner: bool = False) -> dict:
    session = uow.session
    group = _find(uow, name)
    _require_owner(uow, actor, group)
    check_hand_edited(group)
    member = find_user_field(uow, user)
    row = session.get(GroupMember, (group.id, member.id))
    if row is None:
        session.add(GroupMember(group_id=group.id, user_id=member.id, is_owner=owner))
        activity.record(uow, actor, now, "group", name, "member_added", "member", None, user)
    elif row.is_owner != owner:
        row.is_owner = owner
        activity.record(uow, actor, now, "group", name, "changed", f"owner {user}", not owner, owner)
    session.flush()
    return as_dict(uow, group, actor)


def remove_member(uow, actor: Actor, now: datetime, name: str, user: str) -> None:
    session = uow.session
    group = _find(uow, name)
    _require_owner(uow, actor, group)
    check_hand_edited(group)
    member = find_user(uow, user)
    row = session.get(GroupMember, (group.id, member.id))
    if row is None:
        raise NotFound(f"{user} is not a member of {name}")
    session.delete(row)
    activity.record(uow, actor, now, "group", name, "member_removed", "member", user, None)


def delete(uow, actor: Actor, now: datetime, name: str, force: bool = False) -> list[str]:
    """Delete a group; while access rules grant to it or it owns pools, only when forced, which removes those
    rules and leaves those pools to administrators. Returns what forcing changed."""
    session = uow.session
    group = _find(uow, name)
    _require_owner(uow, actor, group)
    rules = session.execute(select(AccessRule, System).join(System, System.id == AccessRule.system_id)
                            .where(AccessRule.group_id == group.id).order_by(System.fqdn, AccessRule.id)
                            ).unique().all()
    pool_rules = session.execute(select(PoolAccessRule, Pool).join(Pool, Pool.id == PoolAccessRule.pool_id)
                                 .where(PoolAccessRule.group_id == group.id).order_by(Pool.name, PoolAccessRule.id)
                                 ).unique().all()
    owned = list(session.execute(select(Pool).where(Pool.owner_group_id == group.id).order_by(Pool.name))
                 .unique().scalars())
    references = ([f"the {rule.permission} rule {rule.id} of {system.fqdn}'s access policy"
                   for rule, system in rules] +
                  [f"the {rule.permission} rule {rule.id} of pool {pool.name}'s access policy"
                   for rule, pool in pool_rules] +
                  [f"pool {pool.name}, which it owns" for pool in owned])
    check_unreferenced(f"group {name}", references, force,
                       "remove those rules and leave those pools to administrators")
    for rule, system in rules:
        system.rules.remove(rule)  # delete-orphan: the row goes, and the loaded policy no longer shows it
        activity.record(uow, actor, now, "system", system.fqdn, "policy_changed", "rule",
                        f"{rule.permission} for group {name}", None)
        uow.emit(SystemChanged(system.id, now, True))
    for rule, pool in pool_rules:
        pool.rules.remove(rule)
        activity.record(uow, actor, now, "pool", pool.name, "policy_changed", "rule",
                        f"{rule.permission} for group {name}", None)
        for system_id in session.execute(select(System.id).where(System.policy_pool_id == pool.id)).scalars():
            uow.emit(SystemChanged(system_id, now, True))
    for pool in owned:
        pool.owner_group_id = None
        activity.record(uow, actor, now, "pool", pool.name, "changed", "owner_group", name, None)
    session.flush()
    session.delete(group)
    activity.record(uow, actor, now, "group", name, "deleted")
    return ([f"removed the {rule.permission} rule {rule.id} of {system.fqdn}'s access policy"
             for rule, system in rules] +
            [f"removed the {rule.permission} rule {rule.id} of pool {pool.name}'s access policy"
             for rule, pool in pool_rules] +
            [f"pool {pool.name} has no owning group now (administrators manage it)" for pool in owned])


def update_me(uow, actor: Actor, now: datetime, data: dict) -> dict:
    """The caller's own mail address and webhook for notices."""
    user = uow.session.get(User, actor.id)
    destinations.check_url(uow.settings, data.get("webhook_url"))
    for key in ("email", "webhook_url", "webhook_secret"):
        if key in data:
            setattr(user, key, data[key] or None)
    activity.record(uow, actor, now, "user", actor.name, "changed", "notifications")
    return {"name": user.name, "email": user.email, "webhook_url": user.webhook_url}
