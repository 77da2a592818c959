"""Who may do what: every permission decision of lablease is made here.

`decide` answers for one actor, one permission and one system; `decide_site`
for actions that are not about one system. Both return a Decision whose
reason the API puts into a 403.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum


class Permission(str, Enum):
    VIEW = "view"
    RESERVE = "reserve"
    LOAN_SELF = "loan_self"
    LOAN_ANY = "loan_any"
    CONTROL_SYSTEM = "control_system"
    EDIT_SYSTEM = "edit_system"
    EDIT_POLICY = "edit_policy"


class SiteAction(str, Enum):
    ADD_SYSTEM = "add system"
    MANAGE_SCHEDULES = "manage schedules"
    VIEW_ALL_RESERVATIONS = "view all reservations"


@dataclass(frozen=True)
class Actor:
    id: int
    name: str
    is_admin: bool = False
    group_ids: frozenset[int] = frozenset()


@dataclass(frozen=True)
class Rule:
    """A grant of one permission to a user, a group, or everybody (both ids None)."""

    permission: Permission
    user_id: int | None = None
    group_id: int | None = None

    def applies_to(self, actor: Actor) -> bool:
        if self.user_id is not None:
            return self.user_id == actor.id
        if self.group_id is not None:
            return self.group_id in actor.group_ids
        return True


@dataclass(frozen=True)
class SystemAccess:
    """What the rules need to know of a system."""

    owner_id: int | None
    condition: str
    rules: tuple[Rule, ...] = ()
    loan_recipient_id: int | None = None
    extra: dict = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Decision:
    allowed: bool
    reason: str

    def __bool__(self) -> bool:
        return self.allowed


ALLOW = Decision(True, "allowed")
# The one refusal that passes by itself (the loan ends): a queued recipe says so rather than "never".
LENT_TO_ANOTHER = "the system is lent to another user"


def default_rules() -> tuple[Rule, ...]:
    """A new system: everybody may view it, and reserve it while it is Manual."""
    return (Rule(Permission.VIEW), Rule(Permission.RESERVE))


def decide(actor: Actor, permission: Permission, system: SystemAccess) -> Decision:
    """May actor exercise permission on system?"""
    privileged = actor.is_admin or (system.owner_id is not None and system.owner_id == actor.id)
    if permission is Permission.RESERVE:
        return _decide_reserve(actor, system, privileged)
    if privileged:
        return ALLOW
    if any(rule.permission is permission and rule.applies_to(actor) for rule in system.rules):
        return ALLOW
    return Decision(False, f"you do not have the {permission.value} permission on this system")


def _decide_reserve(actor: Actor, system: SystemAccess, privileged: bool) -> Decision:
    if system.condition == "removed":
        return Decision(False, "the system is removed")
    lent_to = system.loan_recipient_id
    if lent_to is not None and lent_to != actor.id and not privileged:
        return Decision(False, LENT_TO_ANOTHER)
    if privileged or lent_to == actor.id:
        return ALLOW
    if not any(rule.permission is Permission.RESERVE and rule.applies_to(actor) for rule in system.rules):
        return Decision(False, "you do not have the reserve permission on this system")
    if system.condition != "manual":
        return Decision(False, NOT_BY_HAND[system.condition])
    return ALLOW


# Why a person may not reserve a system of this condition by hand (its owner, admins and the user it is lent to
# may): what stands in the way of this system, not the rule for some other condition.
NOT_BY_HAND = {
    "automated": "the system is automated: the scheduler gives it to jobs, and only the user it is lent to may "
                 "reserve it by hand",
    "broken": "the system is broken: it cannot be reserved until its owner or an administrator repairs it",
}


def decide_site(actor: Actor, action: SiteAction) -> Decision:
    """Actions that are not about one system are for admins."""
    if actor.is_admin:
        return ALLOW
    return Decision(False, f"only administrators may {action.value}")


def may_manage_reservation(actor: Actor, holder_id: int, system: SystemAccess | None) -> Decision:
    """Extend, return or renew a reservation: its holder, the system's owner, admins."""
    if actor.is_admin or actor.id == holder_id:
        return ALLOW
    if system is not None and system.owner_id == actor.id:
        return ALLOW
    return Decision(False, "this reservation belongs to another user")


def may_see_reservation(actor: Actor, holder_id: int, system: SystemAccess | None) -> bool:
    if may_manage_reservation(actor, holder_id, system):
        return True
    return system is not None and bool(decide(actor, Permission.VIEW, system))


def may_see_installation(actor: Actor, owner_id: int | None, people: tuple[int | None, ...]) -> bool:
    """An installation's details (its variables, its kickstart): the people it is for (its requester, the
    holder of the reservation it belongs to), the system's owner and admins; to anybody else it does not
    exist."""
    return actor.is_admin or (actor.id != 0 and actor.id in (owner_id, *people))


def may_manage_pool(actor: Actor, owner_group_id: int | None) -> Decision:
    """Members of a pool's owning group (and admins) add and remove its systems and edit its policy."""
    if actor.is_admin or (owner_group_id is not None and owner_group_id in actor.group_ids):
        return ALLOW
    return Decision(False, "only members of the pool's owning group (or admins) may change it")


def may_use(actor: Actor, system: SystemAccess) -> bool:
    """May actor use the system at all: have the scheduler give it to their recipes, or reserve it by hand?"""
    return bool(decide_schedule(actor, system)) or bool(decide(actor, Permission.RESERVE, system))


def decide_schedule(actor: Actor, system: SystemAccess) -> Decision:
    """May the scheduler give this system to actor's recipe now?

    Only Automated systems are scheduled; a lent system only to its
    recipient; otherwise the reserve permission decides, as for manual
    reservations.
    """
    if system.condition != "automated":
        return Decision(False, f"the system is {system.condition}, not automated")
    privileged = actor.is_admin or system.owner_id == actor.id
    lent_to = system.loan_recipient_id
    if lent_to is not None and lent_to != actor.id and not privileged:
        return Decision(False, LENT_TO_ANOTHER)
    if privileged or lent_to == actor.id:
        return ALLOW
    if any(rule.permission is Permission.RESERVE and rule.applies_to(actor) for rule in system.rules):
        return ALLOW
    return Decision(False, "you may not use this system")
