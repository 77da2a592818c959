"""Advance reservations (Grid Engine's qrsub / qrstat / qrdel / qralter) on lablease's calendar.

Granting books every chosen system on the system's calendar for the window,
all or nothing, in one transaction; work outside the AR then cannot overlap
it (the scheduler reads the same calendar: a recipe with no runtime limit is
not placed there, one that ends before the AR starts may be). Inside, each
held system gets a calendar of the AR's own (a slot resource) on which the
AR's jobs and its users' reservations book, so they cannot overlap each other.
The worker moves ARs through w -> r -> x on time; a system that breaks, goes
away or leaves its lab puts the AR in E until it is satisfied again.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import func, select

from ...domain import advance as rules
from ...domain import holds as rules_holds
from ...domain import permissions
from ...domain.errors import Conflict, Forbidden, Invalid, LimitReached, NotFound
from ...domain.events import AdvanceReservationEnded, SystemFreed
from ...domain.limits import MAX_INT
from ...domain.paging import Page, PageRequest
from ...domain.permissions import Actor
from ...domain.times import format_time
from ...domain.windows import Window
from ...jobxml.normalise import filter_arches, normalise_host_filter
from ...scheduler.filters import LIVE_FIELDS, is_live, verdict
from ...store import calendar
from ...store import paging
from ...store.advance_tables import AdvanceReservation, ArSystem
from ...store.paging import Order
from ...store.queries import host
from ...store.tables import Booking, Group, GroupMember, Pool, RecipeSet, Reservation, Resource, System, User
from ...timeparse import parse_duration, parse_time
from ..catalog import arches
from ..catalog.systems import access_of, active_loan
from ..people.users import ARUSERS, actor_for
from ..records import activity
from .advance_notices import publish

USABLE_CONDITIONS = rules.USABLE_CONDITIONS


# --- answers --------------------------------------------------------------------------------------

def as_dict(ar: AdvanceReservation) -> dict:
    return {"id": ar.id, "name": ar.name, "owner": ar.owner.name, "account": ar.account, "state": ar.state,
            "start": format_time(ar.start_at), "end": format_time(ar.end_at),
            "duration": int((ar.end_at - ar.start_at).total_seconds()),
            "systems": [held.system.fqdn for held in ar.systems], "hosts": ar.hosts or [],
            "requires": ar.requirements, "pools": ar.pools or [], "count": ar.count, "acl": ar.acl or [],
            "mail": {"events": ar.mail_events, "to": ar.mail_to or []}, "error_handling": ar.error_handling,
            "submitted_at": format_time(ar.submitted_at), "error_reasons": ar.error_reasons or [],
            "released": ar.released or []}


def find(uow, actor: Actor, ident) -> AdvanceReservation:
    """An AR by id or name (the caller's own first, then any it may see)."""
    session = uow.session
    if isinstance(ident, int) or (str(ident).isascii() and str(ident).isdigit()):  # not "¹": int() refuses it
        ar = session.get(AdvanceReservation, int(ident)) if int(ident) <= MAX_INT else None  # no larger id exists
        if ar is not None and may_see(uow, actor, ar):
            return ar
        raise NotFound(f"no advance reservation {ident}")
    named = [ar for ar in session.execute(select(AdvanceReservation).where(
        AdvanceReservation.name == str(ident), AdvanceReservation.state.notin_(rules.FINAL))
        .order_by(AdvanceReservation.id)).unique().scalars() if may_see(uow, actor, ar)]
    own = [ar for ar in named if ar.owner_id == actor.id]
    if len(own or named) == 1:
        return (own or named)[0]
    if not named:
        raise NotFound(f"no active advance reservation named {ident}")
    raise Invalid("advance_reservation", f"{len(named)} advance reservations are named {ident}; give its id")


def may_see(uow, actor: Actor, ar: AdvanceReservation) -> bool:
    return actor.is_admin or ar.owner_id == actor.id or in_acl(uow, actor, ar)


def in_acl(uow, actor: Actor, ar: AdvanceReservation) -> bool:
    groups = set(uow.session.execute(select(Group.name).where(Group.id.in_(actor.group_ids))).scalars())
    return rules.in_acl(actor.name, groups, ar.acl or [])


def listing(uow, actor: Actor, user: str | None, page: PageRequest) -> Page:
    """qrstat: the caller's ARs by default; `*` everybody's (that the caller may see), or one user's."""
    query = select(AdvanceReservation)
    if user != "*":
        name = actor.name if user in (None, "", "me") else user
        query = query.join(User, User.id == AdvanceReservation.owner_id).where(User.name == name)
    found = paging.fetch(uow, "advance-reservations", query, [Order(AdvanceReservation.id)], page,
                         keep=lambda ar: may_see(uow, actor, ar))
    return Page([as_dict(ar) for ar in found.items], found.next_after)


def get(uow, actor: Actor, ident, explain: bool = False) -> dict:
    ar = find(uow, actor, ident)
    out = as_dict(ar)
    if explain:
        out["explain"] = _explain(ar)
    return out


def _explain(ar: AdvanceReservation) -> list[str]:
    if ar.state != "E":
        return [f"advance reservation {ar.id} is {ar.state}: not in error"]
    handling = ("no work is dispatched into it (hard error handling)" if ar.error_handling == "hard"
                else "its other systems stay usable (soft error handling)")
    return [*(ar.error_reasons or []), handling]


# --- creating (qrsub) -----------------------------------------------------------------------------

@dataclass(frozen=True)
class AdvanceRequest:
    """A request for an advance reservation (qrsub, POST /advance-reservations, the page's form), parsed and
    checked as far as it can be without reading the database (`parse_request`)."""

    start: datetime
    end: datetime
    acl: list[str]
    requires: object  # the normalised host filter (jobxml/normalise.py), None for any system
    hosts: list[str]
    pools: list[str]
    count: int
    name: str | None = None
    account: str | None = None
    mail_events: str = ""
    mail_to: tuple[str, ...] = ()
    error_handling: str = "soft"
    validate_only: bool = False  # qrsub -w v: made in full (every check), then not kept (store/uow.py)


def parse_request(data: dict, owner: str, now: datetime) -> AdvanceRequest:
    """The body (API), the form's fields (web) or qrsub's options, checked; `owner` is on the ACL by default."""
    start, end = rules.resolve_window(now, _time(data, "start"), _time(data, "end"), _duration(data))
    mail = data.get("mail") or {}
    hosts = data.get("hosts") or []
    tree = normalise_host_filter(data.get("requires"), "requires")
    if is_live(tree):  # the systems are chosen now for a later window: who holds or borrows them then is unknown
        raise Invalid("requires", f"{' and '.join(sorted(LIVE_FIELDS))} cannot choose an advance reservation's "
                                  "systems: who holds or borrows them during it is not known when they are chosen")
    count = len(hosts) if hosts else int(data.get("count") or 1)
    if count < 1:
        raise Invalid("count", "must be at least 1")
    return AdvanceRequest(
        start, end, rules.check_acl(data.get("acl") or [owner]), tree, hosts, data.get("pools") or [], count,
        name=data.get("name"), account=data.get("account"),
        mail_events=rules.check_mail_events(mail.get("events", "")), mail_to=tuple(mail.get("to") or ()),
        error_handling=rules.check_error_handling(data.get("error_handling", "soft")),
        validate_only=bool(data.get("validate_only")))


@dataclass(frozen=True)
class AdvanceChange:
    """What qralter (PATCH /advance-reservations/{id}, the page's form) changes, parsed (`parse_change`): only
    the fields in `given` change."""

    given: frozenset[str]
    name: str | None = None
    acl: list[str] | None = None  # empty or None: the owner alone
    mail: dict | None = None
    end: datetime | None = None
    duration: timedelta | None = None  # from the start, when no end is given
    release: tuple[str, ...] = ()


CHANGEABLE = ("name", "acl", "mail", "end", "duration", "release")


def parse_change(data: dict) -> AdvanceChange:
    """The body (API) or the form's fields (web), its times and durations read."""
    return AdvanceChange(frozenset(key for key in CHANGEABLE if key in data), name=data.get("name"),
                         acl=data.get("acl"), mail=data.get("mail"), end=_time(data, "end"), duration=_duration(data),
                         release=tuple(data.get("release") or ()))


def create(uow, actor: Actor, now: datetime, asked: AdvanceRequest) -> tuple[dict, int]:
    session = uow.session
    _may_create(uow, actor)
    _within_limit(uow)
    start, end, tree, hosts, pools, count = (asked.start, asked.end, asked.requires, asked.hosts, asked.pools,
                                             asked.count)
    members = acl_actors(uow, asked.acl)
    _check_pools(uow, pools)
    arches.check_named(uow, filter_arches(tree), "requires")
    chosen, reasons = choose_systems(uow, Window(start, end), hosts, tree, pools, count, members)
    if len(chosen) < count:
        raise Conflict(_refusal(count, chosen, reasons), reasons=reasons)
    if asked.validate_only:
        uow.validate_only = True
    ar = AdvanceReservation(
        name=asked.name, owner_id=actor.id, account=asked.account, start_at=start, end_at=end,
        state=rules.state_by_time(start, end, now), error_handling=asked.error_handling,
        mail_events=asked.mail_events, mail_to=list(asked.mail_to), acl=asked.acl, requirements=tree, pools=pools,
        hosts=hosts, count=count, error_reasons=[], submitted_at=now, changed_at=now)
    session.add(ar)
    session.flush()
    _book(uow, ar, chosen, now)
    ar.due_at = rules.next_transition(ar.state, start, end, now)
    session.flush()
    session.refresh(ar, ["systems", "owner"])
    activity.record(uow, actor, now, "advance_reservation", ar.id, "created", "state", None, ar.state)
    publish(uow, ar, now, "created", f"advance reservation {ar.id} was granted: "
             f"{', '.join(s.system.fqdn for s in ar.systems)} from {format_time(start)} to {format_time(end)}")
    uow.wake_worker()
    if asked.validate_only:
        return {"grantable": True, "systems": [s.fqdn for s in chosen]}, 200
    return as_dict(ar), 201


def _time(data: dict, key: str) -> datetime | None:
    return parse_time(data[key], key) if data.get(key) else None


def _duration(data: dict) -> timedelta | None:
    return parse_duration(data["duration"], "duration") if data.get("duration") else None


def _may_create(uow, actor: Actor) -> None:
    if actor.is_admin:
        return
    member = uow.session.execute(select(GroupMember).join(Group, Group.id == GroupMember.group_id).where(
        Group.name == ARUSERS, GroupMember.user_id == actor.id)).first()
    if member is None:
        raise Forbidden(f"only administrators and members of the {ARUSERS} group may create advance reservations")


def _within_limit(uow) -> None:
    settings = uow.settings
    limit = settings.max_advance_reservations
    if limit <= 0:
        raise LimitReached("advance reservations are switched off on this server (max_advance_reservations: 0)")
    active = uow.session.execute(select(func.count()).select_from(AdvanceReservation).where(
        AdvanceReservation.state.in_(rules.ACTIVE))).scalar_one()
    if active >= limit:
        raise LimitReached(f"{active} advance reservations are active, the limit (max_advance_reservations) is {limit}")


def acl_actors(uow, acl: list[str]) -> list[Actor]:
    """Everybody the ACL names: its users and the members of its groups (each must exist)."""
    session = uow.session
    actors = {}
    for entry in acl:
        if entry.startswith("@"):
            group = session.execute(select(Group).where(Group.name == entry[1:])).scalar_one_or_none()
            if group is None:
                raise Invalid("acl", f"no group named {entry[1:]}")
            users = session.execute(select(User).join(GroupMember, GroupMember.user_id == User.id)
                                    .where(GroupMember.group_id == group.id)).scalars()
        else:
            user = session.execute(select(User).where(User.name == entry)).scalar_one_or_none()
            if user is None:
                raise Invalid("acl", f"no user named {entry}")
            users = [user]
        for user in users:
            actors[user.id] = actor_for(uow, user)
    return list(actors.values())


def _check_pools(uow, pools: list[str]) -> None:
    known = set(uow.session.execute(select(Pool.name)).scalars())
    for name in pools:
        if name not in known:
            raise Invalid("pools", f"no pool named {name}")


def may_use(actor: Actor, system: System, loan) -> bool:
    """May an ACL user use the system: get it from the scheduler, or reserve it?"""
    return permissions.may_use(actor, access_of(system, loan))


def choose_systems(uow, window: Window, hosts: list[str], tree: dict | None, pools: list[str], count: int,
                   members: list[Actor]) -> tuple[list[System], dict]:
    """The best-suited eligible systems (smallest that fit first), and why the others were not."""
    session = uow.session
    ruled_out: dict[str, int] = {}
    busy = []
    eligible = []
    query = (select(System).where(System.guest.is_(False))  # a guest recipe's virtual machine is its alone
             .order_by(System.memory_mb.nulls_first(), System.cpus.nulls_first(), System.fqdn))
    if hosts:
        query = query.where(System.fqdn.in_([h.lower() for h in hosts]))
        missing = sorted({h.lower() for h in hosts} - set(session.execute(
            select(System.fqdn).where(System.fqdn.in_([h.lower() for h in hosts]))).scalars()))
        if missing:
            raise Invalid("hosts", f"no system named {', '.join(missing)}")
    for system in session.execute(query).unique().scalars():
        reason = _unsuitable(uow, system, tree, pools, members, host)
        if reason is None:
            taken = calendar.touching(session, system.resource_id, window)
            if taken:
                busy.append({"system": system.fqdn, "from": format_time(min(b.start_at for b in taken)),
                             "until": format_time(max(b.end_at for b in taken)) if all(b.end_at for b in taken)
                             else None})
                reason = "booked during the window"
        if reason is None:
            eligible.append(system)
        else:
            ruled_out[reason] = ruled_out.get(reason, 0) + 1
    return eligible[:count], {"ruled_out": ruled_out, "busy": busy}


def facts(uow, system: System, members: list[Actor], granted_lab: str | None = None) -> rules.SystemFacts:
    """The system as the AR rules see it: condition, lab, pools, and which ACL users may not use it."""
    loan = active_loan(uow, system)
    return rules.SystemFacts(system.fqdn, system.condition, system.lab, frozenset(p.name for p in system.pools),
                             tuple(m.name for m in members if not may_use(m, system, loan)), granted_lab)


def _unsuitable(uow, system: System, tree, pools, members, host) -> str | None:
    return rules.ineligible(facts(uow, system, members), verdict(tree, host(system, tree)), pools)


def _refusal(count: int, chosen: list, reasons: dict) -> str:
    parts = [f"{n} {why}" for why, n in sorted(reasons["ruled_out"].items())]
    return (f"cannot grant: {count} system(s) asked for, {len(chosen)} eligible and free"
            + (f"; ruled out: {'; '.join(parts)}" if parts else ""))


def _book(uow, ar: AdvanceReservation, systems: list[System], now: datetime) -> None:
    """Book every system for the window, in id order (a fixed lock order), with a calendar of its own."""
    session = uow.session
    window = Window(ar.start_at, ar.end_at)
    for system in sorted(systems, key=lambda s: s.id):
        resource = calendar.lock_resource(uow, system.resource_id)
        booking = calendar.book(session, resource, window, "ar", ar.owner_id, now)
        slot = Resource(kind="ar_slot", name=f"ar:{ar.id}:{system.fqdn}", capacity=1)
        session.add(slot)
        session.flush()
        session.add(ArSystem(ar_id=ar.id, system_id=system.id, booking_id=booking.id, slot_resource_id=slot.id,
                             lab=system.lab))
    session.flush()


# --- changing (qralter) and deleting (qrdel) ------------------------------------------------------

def _may_manage(actor: Actor, ar: AdvanceReservation) -> None:
    if not (actor.is_admin or ar.owner_id == actor.id):
        raise Forbidden(f"only the owner of advance reservation {ar.id} (or an admin) may change or delete it")


def modify(uow, actor: Actor, now: datetime, ident, change: AdvanceChange) -> dict:
    ar = find(uow, actor, ident)
    _may_manage(actor, ar)
    if ar.state in rules.FINAL:
        raise Conflict(f"advance reservation {ar.id} is {ar.state}: it can no longer change")
    changes = {}
    if "name" in change.given:
        changes["name"] = (ar.name, change.name)
        ar.name = change.name
    if "acl" in change.given:
        acl = rules.check_acl(change.acl or [ar.owner.name])
        members = acl_actors(uow, acl)
        for held in ar.systems:
            loan = active_loan(uow, held.system)
            if not all(may_use(m, held.system, loan) for m in members):
                raise Conflict(f"an ACL user may not use {held.system.fqdn}, which the reservation holds")
        changes["acl"] = (ar.acl, acl)
        ar.acl = acl
    if "mail" in change.given:
        mail = change.mail or {}
        events = rules.check_mail_events(mail.get("events", ar.mail_events))
        changes["mail"] = ({"events": ar.mail_events, "to": ar.mail_to},
                           {"events": events, "to": mail.get("to", ar.mail_to)})
        ar.mail_events, ar.mail_to = events, list(mail.get("to", ar.mail_to) or [])
    if change.given & {"end", "duration"}:
        _move_end(uow, ar, now, change)
        changes["end"] = (None, format_time(ar.end_at))
    if "release" in change.given:
        changes["release"] = (None, ", ".join(_release(uow, ar, now, list(change.release))))
    ar.changed_at = now
    activity.record_changes(uow, actor, now, "advance_reservation", ar.id,
                            {k: (str(a), str(b)) for k, (a, b) in changes.items()})
    publish(uow, ar, now, "modified", f"advance reservation {ar.id} was changed: "
             f"{', '.join(changes) or 'nothing'}")
    return as_dict(ar)


def _move_end(uow, ar: AdvanceReservation, now: datetime, change: AdvanceChange) -> None:
    session = uow.session
    if change.end is None and change.duration is None:
        raise Invalid("end", "give the new end, or a duration from the start")
    end = change.end or ar.start_at + change.duration
    if end <= max(now, ar.start_at):
        raise Invalid("end", "must be after the start and in the future")
    for held in sorted(ar.systems, key=lambda h: h.system_id):
        booking = session.get(Booking, held.booking_id)
        resource = calendar.lock_resource(uow, held.system.resource_id)
        calendar.change_end(session, resource, booking, end)  # 409 naming the booking in the way
    ar.end_at = end
    ar.due_at = rules.next_transition(ar.state, ar.start_at, end, now)
    uow.wake_worker()


def _release(uow, ar: AdvanceReservation, now: datetime, fqdns: list[str]) -> list[str]:
    """Give back some of the AR's systems before its end: free on their calendars from now on (a
    booking not begun yet goes), the scheduler told; the accounting counts them until now."""
    session = uow.session
    held = {h.system.fqdn: h for h in ar.systems}
    names = rules_holds.check_release(fqdns, list(held))
    in_use = _systems_in_use(uow, ar)
    for name in names:
        refusal = rules_holds.release_refusal(name, set(held), in_use, ar.state)
        if refusal and name not in held:
            raise Invalid("release", refusal)
        if refusal:
            raise Conflict(refusal)
    for name in names:
        kept = held[name]
        if kept.booking_id is not None:
            calendar.lock_resource(uow, kept.system.resource_id)
            calendar.release(session, session.get(Booking, kept.booking_id), now)
        ar.systems.remove(kept)
        uow.emit(SystemFreed(kept.system_id, now))
    ar.released = [*(ar.released or []), *({"system": name, "at": format_time(now)} for name in names)]
    session.flush()
    uow.wake_worker()
    return names


def _systems_in_use(uow, ar: AdvanceReservation) -> set[str]:
    """The AR's systems its own work holds now: unfinished recipes, open reservations inside it."""
    sets = uow.session.execute(select(RecipeSet).where(RecipeSet.ar_id == ar.id)).unique().scalars()
    busy = {r.system.fqdn for s in sets for r in s.recipes
            if r.system is not None and r.status not in ("completed", "cancelled", "aborted")}
    return busy | {r.system.fqdn for r in open_reservations(uow, ar)}


def delete(uow, actor: Actor, now: datetime, ident, force: bool = False) -> None:
    ar = find(uow, actor, ident)
    _may_manage(actor, ar)
    if ar.state in rules.FINAL:
        return
    bound = _bound_work(uow, ar)
    if bound and not force:
        raise Conflict(f"advance reservation {ar.id} has bound work ({', '.join(bound)}); "
                       "delete with force=true to abort it first")
    uow.emit(AdvanceReservationEnded(ar.id, now, "d", actor, "deleted"))  # advance_states ends it


def _bound_work(uow, ar: AdvanceReservation) -> list[str]:
    sets = uow.session.execute(select(RecipeSet).where(RecipeSet.ar_id == ar.id)).unique().scalars()
    work = [f"recipe {r.id}" for s in sets for r in s.recipes if r.status not in ("completed", "cancelled", "aborted")]
    work += [f"reservation {r.id}" for r in open_reservations(uow, ar)]
    return work


def open_reservations(uow, ar: AdvanceReservation) -> list[Reservation]:
    return list(uow.session.execute(select(Reservation).where(
        Reservation.ar_id == ar.id, Reservation.returned_at.is_(None))).unique().scalars())
