"""Systems: add, change, remove, list (with free windows), import from YAML."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import exists, func, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import lazyload, selectinload

from ...domain import systems as rules
from ...domain.boot_text import check_options, first_unfit
from ...domain.errors import Conflict, DomainError, Forbidden, Invalid, NotFound
from ...domain.events import SystemChanged, SystemRemoved
from ...domain.numbers import check_whole
from ...domain.paging import Page, PageRequest
from ...domain.permissions import Actor, Permission, Rule, SiteAction, SystemAccess, decide, decide_site, default_rules
from ...domain.times import format_time
from ...domain.variables import masked_ks_meta
from ...domain.windows import Window, window_between
from ...power import registry as power_registry
from ...provision.netboot import LOADERS, normalise_mac
from ...store import calendar, paging
from ...store.paging import Order
from ...store.provision_tables import Installation
from ...store.queries import ar_summaries_for
from ...store.secrets import SECRET_KEYS
from ...store.tables import AccessRule, DistroTree, Loan, Pool, Reservation, Resource, System, User, netboot_mac_key
from ..records import activity, usage
from . import arches, health_state
from .inventory import check_inventory, inventory_of

EDITABLE = ("arch", "cpus", "memory_mb", "lab", "attributes", "condition", "owner", "power", "netboot",
            "release_action", "reprovision_distro_tree", "inventory")


def access_of(system: System, loan: Loan | None = None) -> SystemAccess:
    """What the permission rules need: the system's own policy, or its pool's when it uses one."""
    source = system.policy_pool.rules if system.policy_pool_id is not None else system.rules
    rules_ = tuple(Rule(Permission(r.permission), r.user_id, r.group_id) for r in source)
    return SystemAccess(owner_id=system.owner_id, condition=system.condition, rules=rules_,
                        loan_recipient_id=loan.recipient_id if loan is not None else None)


def active_loans(uow, system_ids: list[int]) -> dict[int, Loan]:
    if not system_ids:
        return {}
    query = select(Loan).where(Loan.system_id.in_(system_ids), Loan.returned_at.is_(None))
    return {loan.system_id: loan for loan in uow.session.execute(query).unique().scalars()}


def active_loan(uow, system: System) -> Loan | None:
    return active_loans(uow, [system.id]).get(system.id)


def require(uow, actor: Actor, permission: Permission, system: System, loan: Loan | None = None) -> SystemAccess:
    """The system's access (its loan included: pass it when already loaded), or Forbidden with the reason."""
    access = access_of(system, loan if loan is not None else active_loan(uow, system))
    decision = decide(actor, permission, access)
    if not decision:
        raise Forbidden(f"{system.fqdn}: {decision.reason}")
    return access


def find(uow, fqdn: str, actor: Actor | None = None) -> System:
    """The system by name; NotFound also when the actor may not view it (no leak of names)."""
    query = select(System).where(System.fqdn == str(fqdn).lower())
    system = uow.session.execute(query).unique().scalar_one_or_none()
    if system is None or (actor is not None and not decide(actor, Permission.VIEW, access_of(system))):
        raise NotFound(f"no system named {fqdn}")
    return system


def public_settings(settings: dict, patterns: tuple[str, ...] = ()) -> dict:
    """Power and netboot settings without their secrets (netboot's ks_meta with secret values masked)."""
    shown = {k: v for k, v in (settings or {}).items() if k.lower() not in SECRET_KEYS}
    if isinstance(shown.get("ks_meta"), str):
        shown["ks_meta"] = masked_ks_meta(shown["ks_meta"], patterns)
    return shown


def _patterns(uow) -> tuple[str, ...]:
    """The site's secret_variables."""
    return tuple(uow.settings.secret_variables or ())


def as_dict(system: System, current: Reservation | None = None, loan: Loan | None = None,
            installation: dict | None = None, held_by: list | None = None, patterns: tuple[str, ...] = (),
            hardware: bool = True, checked: dict | None = None) -> dict:
    return {
        "fqdn": system.fqdn,
        "arch": system.arch,
        "cpus": system.cpus,
        "memory_mb": system.memory_mb,
        "lab": system.lab,
        "attributes": system.attributes or {},
        "condition": system.condition,
        "usage": system.usage,
        "owner": system.owner.name if system.owner else None,
        "power": public_settings(system.power),
        "netboot": public_settings(system.netboot, patterns),
        "reservation": _reservation_summary(current),
        "loan": {"recipient": loan.recipient.name, "end": format_time(loan.end_at),
                 "purpose": loan.purpose} if loan else None,
        "power_state": system.power_state,
        "release_action": system.release_action,
        "reprovision_distro_tree": system.reprovision_distro_tree_id,
        "installation": installation,
        "advance_reservations": held_by or [],  # active ARs holding it (their windows)
        "pools": [pool.name for pool in system.pools],
        "policy_pool": system.policy_pool.name if system.policy_pool else None,
        "guest": system.guest,
        "created_at": format_time(system.created_at),
        "inventory": inventory_of(system, hardware),
        "health": checked or health_state.summary(None, system.created_at),  # services/lifecycle/health.py
    }


def _reservation_summary(reservation: Reservation | None) -> dict | None:
    if reservation is None:
        return None
    return {
        "id": reservation.id,
        "user": reservation.user.name,
        "start": format_time(reservation.start_at),
        "end": format_time(reservation.end_at),
        "purpose": reservation.purpose,
    }


def current_reservations(uow, system_ids: list[int], now: datetime) -> dict[int, Reservation]:
    if not system_ids:
        return {}
    query = select(Reservation).where(
        Reservation.system_id.in_(system_ids), Reservation.returned_at.is_(None), Reservation.start_at <= now
    )
    return {r.system_id: r for r in uow.session.execute(query).unique().scalars()}


def _user_id(uow, name: str | None) -> int | None:
    if name is None:
        return None
    user = uow.session.execute(select(User).where(User.name == name)).scalar_one_or_none()
    if user is None:
        raise Invalid("owner", f"no user named {name}")
    return user.id


def _clean(uow, data: dict) -> dict:
    """Validated column values from an API or import body."""
    out = {}
    if "arch" in data:
        out["arch"] = arches.check(uow, data["arch"])
    for key in ("cpus", "memory_mb"):
        if key in data and data[key] is not None:
            out[key] = check_whole(key, data[key])
    # The lab and attributes reach kickstarts (site templates may print them): one line each.
    unfit = first_unfit({key: data[key] for key in ("lab", "attributes") if key in data}, "")
    if unfit is not None:
        raise Invalid(*unfit)
    if "lab" in data:
        out["lab"] = data["lab"]
    if "attributes" in data:
        out["attributes"] = rules.check_attributes(data["attributes"] or {})
    if "condition" in data:
        out["condition"] = rules.check_condition(data["condition"])
    if "owner" in data:
        out["owner_id"] = _user_id(uow, data["owner"])
    for key in ("power", "netboot"):
        if key in data:
            if not isinstance(data[key], dict):
                raise Invalid(key, "must be an object")
            out[key] = _checked_settings(key, data[key])
    if "release_action" in data:
        out["release_action"] = rules.check_release_action(data["release_action"])
    if "reprovision_distro_tree" in data:
        tree = data["reprovision_distro_tree"]
        if tree is not None and uow.session.get(DistroTree, tree) is None:
            raise Invalid("reprovision_distro_tree", f"no distro tree {tree}")
        out["reprovision_distro_tree_id"] = tree
    if "inventory" in data:
        out.update(check_inventory(data["inventory"]))
    return out


def _keep_secrets(old: dict | None, new: dict) -> dict:
    """Secrets are never shown back, so a client cannot send them again: the stored ones stay unless
    the new settings give them (null removes one)."""
    kept = {k: v for k, v in (old or {}).items() if k.lower() in SECRET_KEYS and k not in new}
    return {k: v for k, v in {**kept, **new}.items() if not (k.lower() in SECRET_KEYS and v is None)}


def _checked_netboot(settings: dict) -> dict:
    loaders = settings.get("loaders")
    if loaders is not None and (not isinstance(loaders, list) or not set(loaders) <= set(LOADERS) or not loaders):
        raise ValueError(f"netboot loaders must be a list of {', '.join(LOADERS)}")
    return {**settings, "mac": normalise_mac(settings["mac"])} if settings.get("mac") else settings


def _check_boot_text(netboot: dict) -> None:
    """Netboot settings reach netboot files and kickstarts: the rule the writers apply (domain/boot_text.py)."""
    unfit = first_unfit(netboot, "netboot")
    if unfit is not None:
        raise Invalid(*unfit)
    for key, what in (("ks_meta", "ks_meta"), ("kernel_options", "kernel options")):
        try:
            check_options(netboot.get(key), what)
        except ValueError as error:
            raise Invalid(f"netboot.{key}", str(error)) from None


def _checked_settings(key: str, settings: dict) -> dict:
    """Power settings name a known driver with what it needs; netboot's MAC is a MAC."""
    if key == "netboot":
        _check_boot_text(settings)
    try:
        if key == "power" and settings.get("driver"):
            power_registry.check_settings(settings)
        if key == "netboot":
            return _checked_netboot(settings)
    except ValueError as error:
        raise Invalid(key, str(error)) from None
    return settings


def _refuse_shared_mac(uow, netboot: dict | None, system_id: int | None) -> None:
    """409 naming the system that already has this netboot MAC: provisioning one would write the other's boot
    file (the database's unique index refuses it too: store/tables.py netboot_mac_key)."""
    mac = (netboot or {}).get("mac")
    if not mac:
        return
    holder = uow.session.execute(select(System.fqdn).where(
        netboot_mac_key(System.netboot) == normalise_mac(mac).replace(":", ""),
        System.id != (system_id or 0))).scalar_one_or_none()
    if holder is not None:
        raise Conflict(f"netboot MAC {mac} is already {holder}'s; each system needs its own "
                       "(provisioning one would write the other's boot file)", system=holder, mac=mac)


def add_system(uow, actor: Actor, now: datetime, data: dict, force: bool | None = None) -> dict:
    decision = decide_site(actor, SiteAction.ADD_SYSTEM)
    if not decision:
        raise Forbidden(decision.reason)
    session = uow.session
    fqdn = rules.check_fqdn(data.get("fqdn"))
    if "arch" not in data:
        raise Invalid("arch", "is required")
    if session.execute(select(System.id).where(System.fqdn == fqdn)).first():
        raise Conflict(f"a system named {fqdn} already exists")
    values = _clean(uow, {"condition": "manual", **data})
    _refuse_shared_mac(uow, values.get("netboot"), None)
    values.setdefault("owner_id", actor.id or None)  # id 0: the server itself
    resource = Resource(kind="system", name=fqdn, capacity=1)
    session.add(resource)
    session.flush()
    system = System(fqdn=fqdn, resource_id=resource.id, created_at=now, usage="idle", **values)
    system.rules = [AccessRule(permission=r.permission.value, user_id=r.user_id, group_id=r.group_id) for r in default_rules()]
    session.add(system)
    session.flush()
    activity.record(uow, actor, now, "system", fqdn, "created", "condition", None, system.condition)
    uow.emit(SystemChanged(system.id, now, force))
    return as_dict(system, patterns=_patterns(uow))


def update_system(uow, actor: Actor, now: datetime, fqdn: str, data: dict, force: bool | None = None) -> dict:
    system = find(uow, fqdn, actor)
    require(uow, actor, Permission.EDIT_SYSTEM, system)
    unknown = sorted(set(data) - set(EDITABLE))
    if unknown:
        raise Invalid(unknown[0], "cannot be changed (changeable: " + ", ".join(EDITABLE) + ")")
    old_condition = system.condition
    data = {**data, **{key: _keep_secrets(getattr(system, key), data[key])
                       for key in ("power", "netboot") if isinstance(data.get(key), dict)}}
    values = _clean(uow, data)
    if "netboot" in values:
        _refuse_shared_mac(uow, values["netboot"], system.id)
    removing = values.get("condition") == "removed" != old_condition
    if removing:
        _check_removal(uow, system, force)
    changes = _apply(uow, system, values)
    activity.record_changes(uow, actor, now, "system", system.fqdn, changes)
    if system.condition != old_condition:
        usage.record_condition(uow, system, old_condition, now)
        health_state.condition_changed(uow, system, old_condition, now)
    uow.session.flush()
    if removing:
        uow.emit(SystemRemoved(system.id, now, actor))  # forced: its reservations and loan end
    if changes:
        uow.emit(SystemChanged(system.id, now, force))
    return describe(uow, system, now)


def describe(uow, system: System, now: datetime) -> dict:
    session = uow.session
    return as_dict(system, current_reservations(uow, [system.id], now).get(system.id), active_loan(uow, system),
                   latest_installations(uow, [system.id]).get(system.id), ar_summaries_for(session, [system.id]).get(system.id),
                   _patterns(uow), checked=health_state.summaries(uow, [system])[system.id])


def latest_installations(uow, system_ids: list[int]) -> dict[int, dict]:
    """System id -> {id, status} of its latest installation."""
    if not system_ids:
        return {}
    latest = (select(func.max(Installation.id)).where(Installation.system_id.in_(system_ids))
              .group_by(Installation.system_id))
    rows = uow.session.execute(select(Installation.system_id, Installation.id, Installation.status)
                           .where(Installation.id.in_(latest)))
    return {system_id: {"id": ident, "status": status} for system_id, ident, status in rows}


def _apply(uow, system: System, values: dict) -> dict[str, tuple]:
    session = uow.session
    changes = {}
    for key, new in values.items():
        old = getattr(system, key)
        if old == new:
            continue
        if key == "owner_id":
            changes["owner"] = (system.owner.name if system.owner else None, session.get(User, new).name if new else None)
        elif key in ("power", "netboot"):
            changes[key] = (public_settings(old, _patterns(uow)), public_settings(new, _patterns(uow)))
        elif key in ("disks", "devices"):  # the log says how many, not every one
            changes[key] = tuple(None if v is None else f"{len(v)} {key}" for v in (old, new))
        else:
            changes[key] = (old, new)
        setattr(system, key, new)
    if "owner_id" in values:
        session.flush()
        session.refresh(system, ["owner"])
    return changes


def _check_removal(uow, system: System, force: bool | None) -> int:
    """The one rule of removing a system, whichever way (DELETE, condition removed, an import): refused while
    someone holds or borrows it unless forced (domain/systems.py refuse_removal)."""
    open_ = list(uow.session.execute(select(Reservation).where(
        Reservation.system_id == system.id, Reservation.returned_at.is_(None))
        .order_by(Reservation.id)).unique().scalars())
    if not force:
        loan = active_loan(uow, system)
        rules.refuse_removal(system.fqdn, [(r.id, r.user.name) for r in open_],
                             loan.recipient.name if loan is not None else None)
    return len(open_)


def remove_system(uow, actor: Actor, now: datetime, fqdn: str, force: bool = False) -> int:
    """Mark a system removed (its history stays); refused while it is reserved or lent unless forced, which
    returns its reservations and its loan: how many reservations were open."""
    system = find(uow, fqdn, actor)
    require(uow, actor, Permission.EDIT_SYSTEM, system)
    held = _check_removal(uow, system, force)  # also when already removed: what an older version left held
    changed = system.condition != "removed"
    if changed:
        activity.record(uow, actor, now, "system", system.fqdn, "changed", "condition", system.condition, "removed")
        old, system.condition = system.condition, "removed"
        usage.record_condition(uow, system, old, now)
        uow.session.flush()
    uow.emit(SystemRemoved(system.id, now, actor))
    if changed:
        uow.emit(SystemChanged(system.id, now, force))  # an advance reservation holding it is told
    return held


def get_system(uow, actor: Actor, now: datetime, fqdn: str) -> dict:
    return describe(uow, find(uow, fqdn, actor), now)


def list_systems(uow, actor: Actor, now: datetime, filters: dict, page: PageRequest = PageRequest()) -> Page:
    # a list never needs the calendar resource (joined by default): not loading it saves a join per row
    query = filtered(uow, actor, now, filters).options(
        selectinload(System.pools), selectinload(System.owner), selectinload(System.policy_pool),
        lazyload(System.resource))
    found = paging.fetch(uow, "systems", query, [Order(System.fqdn)], page,
                         keep=lambda s: decide(actor, Permission.VIEW, access_of(s)))
    return Page(describe_many(uow, found.items, now), found.next_after)


def filtered(uow, actor: Actor, now: datetime, filters: dict):
    """The systems matching the listing's filters (arch, condition, lab, pool, owner, free_from/until,
    reserved_by), as a query (unordered: the API pages it by fqdn, the web sorts and groups); the API's
    list and the web's systems page share it."""
    session = uow.session
    query = select(System)
    for key in ("arch", "condition", "lab"):
        if filters.get(key):
            query = query.where(getattr(System, key) == filters[key])
    if filters.get("pool"):
        pool = session.execute(select(Pool).where(Pool.name == filters["pool"])).unique().scalar_one_or_none()
        if pool is None:
            raise Invalid("pool", f"no pool named {filters['pool']}")
        query = query.where(System.pools.any(Pool.id == pool.id))
    if filters.get("owner"):
        query = query.where(System.owner_id == _user_id(uow, filters["owner"]))
    if filters.get("health"):
        query = health_state.where_health(query, filters["health"])
    if filters.get("free_from") or filters.get("free_until"):
        booked = calendar.booked_during(_free_window(now, filters), System.resource_id, session.get_bind().dialect.name)
        query = query.where(~booked)
    if filters.get("reserved_by"):
        name = actor.name if filters["reserved_by"] == "me" else filters["reserved_by"]
        query = query.where(exists().where(
            Reservation.system_id == System.id, Reservation.returned_at.is_(None),
            Reservation.start_at <= now, Reservation.user_id == _user_id(uow, name)))
    return query


def describe_many(uow, systems: list[System], now: datetime) -> list[dict]:
    ids = [s.id for s in systems]
    current, loans = current_reservations(uow, ids, now), active_loans(uow, ids)
    installed = latest_installations(uow, ids)
    held = ar_summaries_for(uow.session, ids)
    patterns = _patterns(uow)
    checked = health_state.summaries(uow, systems)
    return [as_dict(s, current.get(s.id), loans.get(s.id), installed.get(s.id), held.get(s.id), patterns,
                    hardware=False, checked=checked[s.id]) for s in systems]  # disks and devices: on each system's own page


def _free_window(now: datetime, filters: dict) -> Window:
    start = filters.get("free_from") or now
    return window_between(start, filters.get("free_until"), "free_from" if filters.get("free_from") else "now",
                          "free_until")


def import_systems(uow, actor: Actor, now: datetime, entries: list[tuple[int, dict]], force: bool = False,
                   refused: dict[int, str] | None = None) -> dict:
    """Add each new system as POST /systems and change each known one as PATCH /systems/{fqdn} would, with the
    same checks and consequences (`force` as the API's), each entry on its own (uow.step) so that every refused
    one is named: {"added", "updated", "refused": {index: why}}, `refused` holding those the caller's input
    checks refused already. All or nothing: when any is refused, every write of the import is undone.
    A name given twice is refused: the second would silently undo part of the first."""
    added, updated, refused, first = [], [], dict(refused or {}), {}
    whole = uow.session.begin_nested()
    for index, entry in entries:
        try:
            fqdn = rules.check_fqdn(entry.get("fqdn"))
            if fqdn in first:
                raise Conflict(f"{fqdn} is also system {first[fqdn] + 1} of this import; give each system once")
            first[fqdn] = index
            with uow.step():
                if uow.session.execute(select(System.id).where(System.fqdn == fqdn)).first():
                    update_system(uow, actor, now, fqdn, {k: v for k, v in entry.items() if k != "fqdn"}, force)
                    updated.append(fqdn)
                else:
                    add_system(uow, actor, now, entry, force)
                    added.append(fqdn)
        except DomainError as error:
            refused[index] = error.detail
        except IntegrityError:  # PostgreSQL: a concurrent change took the name or the MAC after the check
            refused[index] = "conflicts with a concurrent change (its name or netboot MAC was just taken); retry"
    if refused:
        whole.rollback()
        return {"added": [], "updated": [], "refused": refused}
    whole.commit()
    return {"added": added, "updated": updated, "refused": {}}


def fqdn_of(uow, system_id: int) -> str:
    return uow.session.execute(select(System.fqdn).where(System.id == system_id)).scalar_one()
