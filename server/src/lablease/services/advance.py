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

from datetime import datetime, timedelta

from sqlalchemy import func, select

from ..domain import advance as rules
from ..domain.errors import Conflict, Forbidden, Invalid, LimitReached, NotFound
from ..domain.permissions import Actor, Permission, decide, decide_schedule
from ..domain.windows import Window
from ..scheduler.filters import verdict
from ..store import calendar
from ..store.tables import (AdvanceReservation, ArSystem, Booking, Group, GroupMember, Pool, Recipe,
                            RecipeSet, Reservation, Resource, System, User)
from ..store.uow import emit, wake_worker
from ..timeparse import format_time, parse_duration, parse_time
from . import activity, notices
from .systems import access_of, active_loan
from .users import ARUSERS, actor_for

USABLE_CONDITIONS = ("automated", "manual")


# --- answers --------------------------------------------------------------------------------------

def as_dict(ar: AdvanceReservation) -> dict:
    return {"id": ar.id, "name": ar.name, "owner": ar.owner.name, "account": ar.account, "state": ar.state,
            "start": format_time(ar.start_at), "end": format_time(ar.end_at),
            "duration": int((ar.end_at - ar.start_at).total_seconds()),
            "systems": [held.system.fqdn for held in ar.systems], "hosts": ar.hosts or [],
            "requires": ar.requirements, "pools": ar.pools or [], "count": ar.count, "acl": ar.acl or [],
            "mail": {"events": ar.mail_events, "to": ar.mail_to or []}, "error_handling": ar.error_handling,
            "submitted_at": format_time(ar.submitted_at), "error_reasons": ar.error_reasons or []}


def find(session, actor: Actor, ident, settings=None) -> AdvanceReservation:
    """An AR by id or name (the caller's own first, then any it may see)."""
    if isinstance(ident, int) or str(ident).isdigit():
        ar = session.get(AdvanceReservation, int(ident))
        if ar is not None and _may_see(session, actor, ar):
            return ar
        raise NotFound(f"no advance reservation {ident}")
    named = [ar for ar in session.execute(select(AdvanceReservation).where(
        AdvanceReservation.name == str(ident), AdvanceReservation.state.notin_(rules.FINAL))
        .order_by(AdvanceReservation.id)).unique().scalars() if _may_see(session, actor, ar)]
    own = [ar for ar in named if ar.owner_id == actor.id]
    if len(own or named) == 1:
        return (own or named)[0]
    if not named:
        raise NotFound(f"no active advance reservation named {ident}")
    raise Invalid("advance_reservation", f"{len(named)} advance reservations are named {ident}; give its id")


def _may_see(session, actor: Actor, ar: AdvanceReservation) -> bool:
    return actor.is_admin or ar.owner_id == actor.id or in_acl(session, actor, ar)


def in_acl(session, actor: Actor, ar: AdvanceReservation) -> bool:
    groups = set(session.execute(select(Group.name).where(Group.id.in_(actor.group_ids))).scalars())
    return rules.in_acl(actor.name, groups, ar.acl or [])


def listing(uow, actor: Actor, user: str | None = None) -> list[dict]:
    """qrstat: the caller's ARs by default; `*` everybody's (that the caller may see), or one user's."""
    query = select(AdvanceReservation).order_by(AdvanceReservation.id)
    if user != "*":
        name = actor.name if user in (None, "", "me") else user
        query = query.join(User, User.id == AdvanceReservation.owner_id).where(User.name == name)
    session = uow.session
    return [as_dict(ar) for ar in session.execute(query).unique().scalars() if _may_see(session, actor, ar)]


def get(uow, actor: Actor, ident, explain: bool = False) -> dict:
    ar = find(uow.session, actor, ident)
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

def create(uow, actor: Actor, now: datetime, data: dict) -> tuple[dict, int]:
    session, settings = uow.session, uow.settings
    _may_create(session, actor)
    _within_limit(session, settings)
    start, end = rules.resolve_window(now, _time(data, "start"), _time(data, "end"), _duration(data))
    acl = rules.check_acl(data.get("acl") or [actor.name])
    members = _acl_actors(session, acl)
    mail = data.get("mail") or {}
    events = rules.check_mail_events(mail.get("events", ""))
    handling = rules.check_error_handling(data.get("error_handling", "soft"))
    hosts, tree, pools = data.get("hosts") or [], data.get("requires"), data.get("pools") or []
    count = len(hosts) if hosts else int(data.get("count") or 1)
    if count < 1:
        raise Invalid("count", "must be at least 1")
    _check_pools(session, pools)
    chosen, reasons = choose_systems(session, Window(start, end), hosts, tree, pools, count, members)
    if len(chosen) < count:
        raise Conflict(_refusal(count, chosen, reasons), reasons=reasons)
    if data.get("validate_only"):
        return {"grantable": True, "systems": [s.fqdn for s in chosen]}, 200
    ar = AdvanceReservation(
        name=data.get("name"), owner_id=actor.id, account=data.get("account"), start_at=start, end_at=end,
        state=rules.state_by_time(start, end, now), error_handling=handling, mail_events=events,
        mail_to=list(mail.get("to") or []), acl=acl, requirements=tree, pools=pools, hosts=hosts, count=count,
        error_reasons=[], submitted_at=now, changed_at=now)
    session.add(ar)
    session.flush()
    _book(session, ar, chosen, now)
    ar.due_at = rules.next_transition(ar.state, start, end, now)
    session.flush()
    session.refresh(ar, ["systems", "owner"])
    activity.record(session, actor, now, "advance_reservation", ar.id, "created", "state", None, ar.state)
    _publish(session, settings, ar, now, "created", f"advance reservation {ar.id} was granted: "
             f"{', '.join(s.system.fqdn for s in ar.systems)} from {format_time(start)} to {format_time(end)}")
    wake_worker(session)
    return as_dict(ar), 201


def _time(data: dict, key: str) -> datetime | None:
    return parse_time(data[key], key) if data.get(key) else None


def _duration(data: dict) -> timedelta | None:
    return parse_duration(data["duration"], "duration") if data.get("duration") else None


def _may_create(session, actor: Actor) -> None:
    if actor.is_admin:
        return
    member = session.execute(select(GroupMember).join(Group, Group.id == GroupMember.group_id).where(
        Group.name == ARUSERS, GroupMember.user_id == actor.id)).first()
    if member is None:
        raise Forbidden(f"only administrators and members of the {ARUSERS} group may create advance reservations")


def _within_limit(session, settings) -> None:
    limit = settings.max_advance_reservations
    if limit <= 0:
        raise LimitReached("advance reservations are switched off on this server (max_advance_reservations: 0)")
    active = session.execute(select(func.count()).select_from(AdvanceReservation).where(
        AdvanceReservation.state.in_(rules.ACTIVE))).scalar_one()
    if active >= limit:
        raise LimitReached(f"{active} advance reservations are active, the limit (max_advance_reservations) is {limit}")


def _acl_actors(session, acl: list[str]) -> list[Actor]:
    """Everybody the ACL names: its users and the members of its groups (each must exist)."""
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
            actors[user.id] = actor_for(session, user)
    return list(actors.values())


def _check_pools(session, pools: list[str]) -> None:
    known = set(session.execute(select(Pool.name)).scalars())
    for name in pools:
        if name not in known:
            raise Invalid("pools", f"no pool named {name}")


def may_use(actor: Actor, system: System, loan) -> bool:
    """May an ACL user use the system: get it from the scheduler, or reserve it?"""
    access = access_of(system, loan)
    return bool(decide_schedule(actor, access)) or bool(decide(actor, Permission.RESERVE, access))


def choose_systems(session, window: Window, hosts: list[str], tree: dict | None, pools: list[str], count: int,
                   members: list[Actor]) -> tuple[list[System], dict]:
    """The best-suited eligible systems (smallest that fit first), and why the others were not."""
    from .scheduling import host  # the scheduler's view of a system, for the same filters as hostRequires

    ruled_out: dict[str, int] = {}
    busy = []
    eligible = []
    query = select(System).order_by(System.memory_mb.nulls_first(), System.cpus.nulls_first(), System.fqdn)
    if hosts:
        query = query.where(System.fqdn.in_([h.lower() for h in hosts]))
        missing = sorted({h.lower() for h in hosts} - set(session.execute(
            select(System.fqdn).where(System.fqdn.in_([h.lower() for h in hosts]))).scalars()))
        if missing:
            raise Invalid("hosts", f"no system named {', '.join(missing)}")
    for system in session.execute(query).unique().scalars():
        reason = _unsuitable(session, system, tree, pools, members, host)
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


def _unsuitable(session, system: System, tree, pools, members, host) -> str | None:
    if system.condition not in USABLE_CONDITIONS:
        return f"{system.condition}"
    matches, why = verdict(tree, host(system))
    if not matches:
        return why
    if pools and not {p.name for p in system.pools} & set(pools):
        return "not in the pools asked for"
    loan = active_loan(session, system)
    if not all(may_use(member, system, loan) for member in members):
        return "an ACL user may not use it"
    return None


def _refusal(count: int, chosen: list, reasons: dict) -> str:
    parts = [f"{n} {why}" for why, n in sorted(reasons["ruled_out"].items())]
    return (f"cannot grant: {count} system(s) asked for, {len(chosen)} eligible and free"
            + (f"; ruled out: {'; '.join(parts)}" if parts else ""))


def _book(session, ar: AdvanceReservation, systems: list[System], now: datetime) -> None:
    """Book every system for the window, in id order (a fixed lock order), with a calendar of its own."""
    window = Window(ar.start_at, ar.end_at)
    for system in sorted(systems, key=lambda s: s.id):
        resource = calendar.lock_resource(session, system.resource_id)
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


def modify(uow, actor: Actor, now: datetime, ident, data: dict) -> dict:
    session, settings = uow.session, uow.settings
    ar = find(session, actor, ident)
    _may_manage(actor, ar)
    if ar.state in rules.FINAL:
        raise Conflict(f"advance reservation {ar.id} is {ar.state}: it can no longer change")
    changes = {}
    if "name" in data:
        changes["name"] = (ar.name, data["name"])
        ar.name = data["name"]
    if "acl" in data:
        acl = rules.check_acl(data["acl"] or [ar.owner.name])
        members = _acl_actors(session, acl)
        for held in ar.systems:
            loan = active_loan(session, held.system)
            if not all(may_use(m, held.system, loan) for m in members):
                raise Conflict(f"an ACL user may not use {held.system.fqdn}, which the reservation holds")
        changes["acl"] = (ar.acl, acl)
        ar.acl = acl
    if "mail" in data:
        mail = data["mail"] or {}
        events = rules.check_mail_events(mail.get("events", ar.mail_events))
        changes["mail"] = ({"events": ar.mail_events, "to": ar.mail_to}, {"events": events, "to": mail.get("to", ar.mail_to)})
        ar.mail_events, ar.mail_to = events, list(mail.get("to", ar.mail_to) or [])
    if "end" in data or "duration" in data:
        _move_end(session, ar, now, data)
        changes["end"] = (None, format_time(ar.end_at))
    ar.changed_at = now
    activity.record_changes(session, actor, now, "advance_reservation", ar.id,
                            {k: (str(a), str(b)) for k, (a, b) in changes.items()})
    _publish(session, settings, ar, now, "modified", f"advance reservation {ar.id} was changed: "
             f"{', '.join(changes) or 'nothing'}")
    return as_dict(ar)


def _move_end(session, ar: AdvanceReservation, now: datetime, data: dict) -> None:
    end = (parse_time(data["end"], "end") if data.get("end")
           else ar.start_at + parse_duration(data["duration"], "duration"))
    if end <= max(now, ar.start_at):
        raise Invalid("end", "must be after the start and in the future")
    for held in sorted(ar.systems, key=lambda h: h.system_id):
        booking = session.get(Booking, held.booking_id)
        resource = calendar.lock_resource(session, held.system.resource_id)
        calendar.change_end(session, resource, booking, end)  # 409 naming the booking in the way
    ar.end_at = end
    ar.due_at = rules.next_transition(ar.state, ar.start_at, end, now)
    wake_worker(session)


def delete(uow, actor: Actor, now: datetime, ident, force: bool = False) -> None:
    session = uow.session
    ar = find(session, actor, ident)
    _may_manage(actor, ar)
    if ar.state in rules.FINAL:
        return
    bound = _bound_work(session, ar)
    if bound and not force:
        raise Conflict(f"advance reservation {ar.id} has bound work ({', '.join(bound)}); "
                       "delete with force=true to abort it first")
    _finish(session, uow.settings, ar, now, "d", actor, "deleted")


def _bound_work(session, ar: AdvanceReservation) -> list[str]:
    sets = session.execute(select(RecipeSet).where(RecipeSet.ar_id == ar.id)).unique().scalars()
    work = [f"recipe {r.id}" for s in sets for r in s.recipes if r.status not in ("completed", "cancelled", "aborted")]
    work += [f"reservation {r.id}" for r in _open_reservations(session, ar)]
    return work


def _open_reservations(session, ar: AdvanceReservation) -> list[Reservation]:
    return list(session.execute(select(Reservation).where(
        Reservation.ar_id == ar.id, Reservation.returned_at.is_(None))).unique().scalars())


def _finish(session, settings, ar: AdvanceReservation, now: datetime, state: str, actor: Actor | None,
            why: str) -> None:
    """End the AR (x at its end, d when deleted): bound work is aborted, nested reservations returned,
    the systems' bookings released from now."""
    from .endings import close_reservation
    from .jobs import finish as finish_recipe
    from .placement import refresh_rollups

    for recipe_set in session.execute(select(RecipeSet).where(RecipeSet.ar_id == ar.id)).unique().scalars():
        for recipe in recipe_set.recipes:
            if recipe.status not in ("completed", "cancelled", "aborted"):
                finish_recipe(session, recipe, "aborted", now, actor, settings)
                activity.record(session, actor, now, "recipe", recipe.id, "aborted", "reason", None,
                                f"advance reservation {ar.id} {why}")
        refresh_rollups(session, recipe_set, now)
    for reservation in _open_reservations(session, ar):
        close_reservation(session, reservation, now, "ar_ended", actor, settings)
    for held in ar.systems:
        if held.booking_id is not None and state == "d":
            calendar.release(session, session.get(Booking, held.booking_id), now)
        emit(session, "system_freed", (held.system_id, now))
    _move(session, settings, ar, state, now, actor, why)
    ar.due_at = None


def _move(session, settings, ar: AdvanceReservation, state: str, now: datetime, actor: Actor | None,
          why: str) -> None:
    rules.check_transition(ar.state, state)
    old, ar.state, ar.changed_at = ar.state, state, now
    activity.record(session, actor, now, "advance_reservation", ar.id, why, "state", old, state)
    kind = {"r": "b", "x": "e", "d": "e", "E": "a"}.get(state, "a")
    _publish(session, settings, ar, now, "state_changed", f"advance reservation {ar.id}: {old} -> {state} ({why})",
             mail_kind=kind, extra={"old": old, "new": state})


# --- living: time, errors -------------------------------------------------------------------------

def transition_due(uow, now: datetime, batch: int = 100) -> list[int]:
    """The worker's step: ARs whose start or end came move w -> r, r/E -> x."""
    session = uow.session
    due = list(session.execute(select(AdvanceReservation).where(
        AdvanceReservation.due_at <= now, AdvanceReservation.state.in_(rules.ACTIVE))
        .order_by(AdvanceReservation.due_at).limit(batch)
        .with_for_update(skip_locked=True, of=AdvanceReservation)).unique().scalars())
    for ar in due:
        if now >= ar.end_at:
            _finish(session, uow.settings, ar, now, "x", None, "its end was reached")
        elif ar.state == "w":
            _move(session, uow.settings, ar, "r", now, None, "its start was reached")
            ar.due_at = rules.next_transition("r", ar.start_at, ar.end_at, now)
            place_bound(session, ar, now)
        else:
            ar.due_at = rules.next_transition(ar.state, ar.start_at, ar.end_at, now)
    return [ar.id for ar in due]


def next_due(uow) -> datetime | None:
    return uow.session.execute(select(AdvanceReservation.due_at).where(
        AdvanceReservation.due_at.is_not(None), AdvanceReservation.state.in_(rules.ACTIVE))
        .order_by(AdvanceReservation.due_at).limit(1)).scalar_one_or_none()


def holding(session, system_id: int, states=rules.ACTIVE) -> list[AdvanceReservation]:
    return list(session.execute(select(AdvanceReservation).join(ArSystem, ArSystem.ar_id == AdvanceReservation.id)
                                .where(ArSystem.system_id == system_id, AdvanceReservation.state.in_(states)))
                .unique().scalars())


# Changes an operator makes on purpose (refused unless forced) and events that just happen (into E).
FORESEEABLE = ("removed", "pool", "acl")


def problems(session, ar: AdvanceReservation) -> list[tuple[str, str]]:
    """Why the AR cannot be satisfied now, as (kind, text): held systems that broke, went away, left
    their lab or the pools asked for, or that an ACL user may no longer use."""
    found = []
    members = None
    for held in ar.systems:
        system = held.system
        if system.condition not in USABLE_CONDITIONS:
            found.append(("removed" if system.condition == "removed" else "broken",
                          f"{system.fqdn} is {system.condition}"))
            continue
        if (system.lab or None) != (held.lab or None):
            found.append(("lab", f"{system.fqdn} left lab {held.lab or '(none)'}"))
        if ar.pools and not {p.name for p in system.pools} & set(ar.pools):
            found.append(("pool", f"{system.fqdn} is no longer in pool(s) {', '.join(ar.pools)}"))
        members = members if members is not None else _acl_actors(session, ar.acl or [])
        loan = active_loan(session, system)
        locked_out = [m.name for m in members if not may_use(m, system, loan)]
        if locked_out:
            found.append(("acl", f"{', '.join(locked_out)} may no longer use {system.fqdn}"))
    return found


def recheck(session, settings, ar: AdvanceReservation, now: datetime, actor: Actor | None = None) -> None:
    """Into E when a held system is no longer usable; out of it (by time) once all are again.

    A change made on purpose that would break a granted AR (removing or retiring its system, taking
    it out of a pool the AR asked for, locking an ACL user out) is refused unless the request said
    force=true; forced, the AR goes into error and the change is logged.
    """
    found = problems(session, ar)
    new = [text for kind, text in found if text not in (ar.error_reasons or []) and kind in FORESEEABLE]
    if new and not session.info.get("force"):
        raise Conflict(f"this would break advance reservation {ar.id} ({'; '.join(new)}); "
                       "repeat with force=true to do it anyway (the reservation goes into error)")
    if new:
        activity.record(session, actor, now, "advance_reservation", ar.id, "forced", "change", None, "; ".join(new))
    reasons = [text for _, text in found]
    ar.error_reasons = reasons
    if reasons and ar.state in ("w", "r"):
        _move(session, settings, ar, "E", now, actor, "; ".join(reasons))
    elif not reasons and ar.state == "E":
        _move(session, settings, ar, rules.state_by_time(ar.start_at, ar.end_at, now), now, actor,
              "its systems are usable again")
        place_bound(session, ar, now)


def on_system_changed(uow, system_id: int, now: datetime) -> None:
    for ar in holding(uow.session, system_id):
        recheck(uow.session, uow.settings, ar, now)


def on_system_freed(uow, system_id: int, now: datetime) -> None:
    for ar in holding(uow.session, system_id, ("r", "E")):
        place_bound(uow.session, ar, now)


def on_new_set(uow, set_id: int, now: datetime) -> None:
    recipe_set = uow.session.get(RecipeSet, set_id)
    if recipe_set is not None and recipe_set.ar_id is not None:
        ar = uow.session.get(AdvanceReservation, recipe_set.ar_id)
        if ar is not None:
            place_bound(uow.session, ar, now)


HANDLERS = {"system_changed": on_system_changed, "system_freed": on_system_freed, "recipe_set_new": on_new_set}


def handle(uow, name: str, payload) -> None:
    handler = HANDLERS.get(name)
    if handler is not None:
        handler(uow, *payload)


# --- bound work -----------------------------------------------------------------------------------

def usable_systems(ar: AdvanceReservation) -> list[ArSystem]:
    """Where bound work may run now: nothing outside r/E, nothing at all in a hard error."""
    if ar.state == "r" or (ar.state == "E" and ar.error_handling == "soft"):
        return [held for held in ar.systems if held.system.condition in USABLE_CONDITIONS
                and (held.system.lab or None) == (held.lab or None)]
    return []


def place_bound(session, ar: AdvanceReservation, now: datetime) -> None:
    """Start the AR's queued recipe sets, by priority then age, each all or nothing on the AR's systems."""
    from ..scheduler.planner import Need, place
    from .placement import runtime_of, start
    from .scheduling import host

    held = usable_systems(ar) if ar.start_at <= now < ar.end_at else []
    if not held:
        return
    by_system = {h.system_id: h for h in held}
    sets = session.execute(select(RecipeSet).where(RecipeSet.ar_id == ar.id, RecipeSet.status == "queued")
                           .order_by(RecipeSet.priority.desc(), RecipeSet.queued_at, RecipeSet.id)).unique().scalars()
    for recipe_set in list(sets):
        needs = [Need(r.id, tuple(sid for sid, h in by_system.items()
                                  if verdict(r.spec.get("host_requires"), host(h.system))[0]), runtime_of(r))
                 for r in recipe_set.recipes if r.status == "queued"]

        def is_free(system_id: int, runtime) -> bool:
            window = Window(now, min(now + runtime, ar.end_at) if runtime else ar.end_at)
            return not calendar.touching(session, by_system[system_id].slot_resource_id, window)

        plan = place(needs, is_free)
        if plan is not None:
            start(session, recipe_set, plan, now,
                  resource_of=lambda system: by_system[system.id].slot_resource_id)


def check_bound_set(session, actor: Actor, ar_id: int, recipes: list[dict], offset: timedelta, now: datetime,
                    where: str) -> None:
    """Submit-time checks of a recipe set bound to an AR (recipes in the job's JSON form)."""
    from .scheduling import host

    ar = session.get(AdvanceReservation, ar_id)
    if ar is None or ar.state in rules.FINAL:
        raise Invalid(where, f"no advance reservation {ar_id} (or it has ended)")
    if not (actor.is_admin or ar.owner_id == actor.id or in_acl(session, actor, ar)):
        raise Forbidden(f"you are not in the ACL of advance reservation {ar_id}")
    if len(recipes) > len(ar.systems):
        raise Invalid(where, f"{len(recipes)} recipes, but advance reservation {ar_id} holds {len(ar.systems)} systems")
    for index, recipe in enumerate(recipes):
        limit = recipe.get("runtime_limit")
        problem = rules.bound_runtime_problem(now, ar.start_at, ar.end_at, offset,
                                              timedelta(seconds=limit) if limit else None)
        if problem:
            raise Invalid(f"{where}.recipes[{index}].runtime_limit", problem)
        if not any(verdict(recipe.get("host_requires"), host(h.system))[0] for h in ar.systems):
            raise Invalid(f"{where}.recipes[{index}].host_requires",
                          f"no system of advance reservation {ar_id} matches")


def slot_for_reservation(session, actor: Actor, ar_id: int, system: System, start: datetime,
                         end: datetime | None) -> tuple[AdvanceReservation, Resource]:
    """An ACL user's reservation inside the AR: where it books (the AR's calendar for the system)."""
    ar = session.get(AdvanceReservation, ar_id)
    if ar is None or ar.state in rules.FINAL or not _may_see(session, actor, ar):
        raise Invalid("advance_reservation", f"no active advance reservation {ar_id}")
    if not (actor.is_admin or ar.owner_id == actor.id or in_acl(session, actor, ar)):
        raise Forbidden(f"you are not in the ACL of advance reservation {ar_id}")
    held = next((h for h in ar.systems if h.system_id == system.id), None)
    if held is None:
        raise Invalid("system", f"advance reservation {ar_id} does not hold {system.fqdn}")
    if ar.state == "E" and ar.error_handling == "hard":
        raise Conflict(f"advance reservation {ar_id} is in error with hard error handling: nothing runs in it")
    if start < ar.start_at or end is None or end > ar.end_at:
        raise Invalid("end", f"a reservation inside advance reservation {ar_id} must fit its window "
                             f"{format_time(ar.start_at)} .. {format_time(ar.end_at)}")
    return ar, calendar.lock_resource(session, held.slot_resource_id)


def window_end(session, ar_id: int) -> datetime | None:
    ar = session.get(AdvanceReservation, ar_id)
    return ar.end_at if ar is not None else None


# --- seeing --------------------------------------------------------------------------------------

def summaries_for(session, system_ids: list[int]) -> dict[int, list[dict]]:
    """System id -> the active ARs holding it (for system listings)."""
    if not system_ids:
        return {}
    rows = session.execute(select(ArSystem.system_id, AdvanceReservation).join(
        AdvanceReservation, AdvanceReservation.id == ArSystem.ar_id).where(
        ArSystem.system_id.in_(system_ids), AdvanceReservation.state.in_(rules.ACTIVE))
        .order_by(AdvanceReservation.start_at)).unique().all()
    found: dict[int, list[dict]] = {}
    for system_id, ar in rows:
        found.setdefault(system_id, []).append({"id": ar.id, "name": ar.name, "state": ar.state,
                                                "start": format_time(ar.start_at), "end": format_time(ar.end_at)})
    return found


def accounting(uow, actor: Actor, now: datetime, ident) -> dict:
    """Reserved system-time against the time its bound work and reservations used."""
    session = uow.session
    ar = find(session, actor, ident)
    until = min(now, ar.end_at) if ar.state != "d" else min(ar.changed_at, ar.end_at)
    used = []
    for recipe_set in session.execute(select(RecipeSet).where(RecipeSet.ar_id == ar.id)).unique().scalars():
        for recipe in recipe_set.recipes:
            if recipe.started_at is not None and recipe.system is not None:
                seconds = rules.overlap_seconds([(recipe.started_at, recipe.finished_at or until)], ar.start_at, until)
                used.append(("job", {"job": recipe.job_id, "recipe": recipe.id, "system": recipe.system.fqdn},
                             recipe.system.fqdn, seconds))
    for reservation in session.execute(select(Reservation).where(Reservation.ar_id == ar.id)).unique().scalars():
        end = min(filter(None, (reservation.returned_at, reservation.end_at, until)))
        seconds = rules.overlap_seconds([(reservation.start_at, end)], ar.start_at, until)
        used.append(("reservation", {"reservation": reservation.id, "user": reservation.user.name,
                                     "system": reservation.system.fqdn}, reservation.system.fqdn, seconds))
    per_system = {held.system.fqdn: 0.0 for held in ar.systems}
    for _, _, fqdn, seconds in used:
        per_system[fqdn] = per_system.get(fqdn, 0.0) + seconds
    each = rules.reserved_seconds(ar.start_at, ar.end_at, until, 1)
    return {"ar": ar.id, "account": ar.account, "state": ar.state,
            "reserved_seconds": rules.reserved_seconds(ar.start_at, ar.end_at, until, len(ar.systems)),
            "used_seconds": sum(s for *_, s in used),
            "systems": [{"system": fqdn, "reserved_seconds": each, "used_seconds": seconds}
                        for fqdn, seconds in per_system.items()],
            "jobs": [{**what, "seconds": s} for kind, what, _, s in used if kind == "job"],
            "reservations": [{**what, "seconds": s} for kind, what, _, s in used if kind == "reservation"]}


# --- events ---------------------------------------------------------------------------------------

def _publish(session, settings, ar: AdvanceReservation, now: datetime, event: str, text: str,
             mail_kind: str | None = None, extra: dict | None = None) -> None:
    """Webhooks of the owner (and their groups) for every event; mail only for the AR's -m flags."""
    mail = bool(mail_kind) and rules.wants_mail(ar.mail_events, mail_kind)
    data = {"advance_reservation": ar.id, "name": ar.name, "state": ar.state, **(extra or {})}
    key = f"{ar.id}:{event}:{ar.state}:{now.isoformat()}"
    notices.queue(session, settings, ar.owner, now, f"ar.{event}", key,
                  f"[lablease] advance reservation {ar.id}: {event.replace('_', ' ')}", text, data,
                  channels=None if mail else ("webhook",), extra_mail=(ar.mail_to or []) if mail else ())
