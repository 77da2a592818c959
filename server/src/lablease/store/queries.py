"""Read helpers shared by several use cases: what one use case reads of another's rows lives here,
so use cases need not import each other for it."""
from __future__ import annotations

from sqlalchemy import and_, bindparam, exists, false, func, literal_column, or_, select, true
from sqlalchemy.orm.attributes import set_committed_value

from ..domain import advance as advance_rules
from ..domain.times import format_time
from ..scheduler.filters import Host, needs_hardware
from .tables import ClassCandidate, Pool, PoolSystem, Recipe, RecipeSet, System
from .advance_tables import AdvanceReservation, ArSystem
from .waitline_tables import ReservationWait

# What a freed system may be wanted by: an advance reservation that holds it and is running or in error (it
# may place its work now), a waiting reservation whose requirement class lists it, and for an Automated
# system any recipe set waiting anywhere (the head of the queue may hold it) or a waiting reservation held
# back by its pool's automation floor (one of the pool's systems may be granted now).
_SYSTEM = System.__table__


def _among(*values) -> list:
    """Constant words written into the statement (an IN of bound values is expanded at every execution)."""
    assert all(value.isalpha() for value in values)  # state names: nothing to quote
    return [literal_column(f"'{value}'") for value in values]


_WANTED = select(or_(
    exists().where(ArSystem.system_id == _SYSTEM.c.id, AdvanceReservation.id == ArSystem.ar_id,
                   AdvanceReservation.state.in_(_among("r", "E"))),
    exists().where(ClassCandidate.system_id == _SYSTEM.c.id, ReservationWait.class_id == ClassCandidate.class_id,
                   ReservationWait.status == "waiting"),
    and_(_SYSTEM.c.condition == "automated", or_(
        exists().where(RecipeSet.multi.in_([true(), false()]), RecipeSet.status.in_(_among("queued", "assigned"))),
        exists().where(PoolSystem.system_id == _SYSTEM.c.id, Pool.id == PoolSystem.pool_id,
                       Pool.automation_floor > 0))))).where(_SYSTEM.c.id == bindparam("system_id"))


def freed_system_wanted(session, system_id: int) -> bool:
    """Whether anything could take the freed system (one indexed statement): when nothing could, the
    handlers of SystemFreed have nothing to offer and a return skips them (they had cost a return three
    times its own work)."""
    session.flush()  # a wait or an advance reservation changed in this unit of work counts (a no-op if none)
    return bool(session.connection().execute(_WANTED, {"system_id": system_id}).scalar())


def host(system: System, tree: dict | None = None) -> Host:
    """What the scheduler's filters see of a system; its disks and devices only when `tree` looks at them."""
    hardware = needs_hardware(tree)
    return Host(system.id, system.fqdn, system.arch, system.memory_mb, system.cpus, system.lab,
                system.attributes or {}, frozenset(p.name for p in system.pools),
                vendor=system.vendor, model=system.model, serial=system.serial, location=system.location,
                lender=system.lender, system_type=system.system_type, hypervisor=system.hypervisor,
                status=system.condition.capitalize(), owner=system.owner.name if system.owner else None,
                powertype=(system.power or {}).get("driver"), numa_nodes=system.numa_nodes,
                added=system.created_at.date(),
                last_inventoried=system.last_inventoried.date() if system.last_inventoried else None,
                cpu=system.cpu or {}, disks=tuple(system.disks or ()) if hardware else (),
                devices=tuple(system.devices or ()) if hardware else ())


def ar_summaries_for(session, system_ids: list[int]) -> dict[int, list[dict]]:
    """System id -> the active advance reservations holding it (for system listings)."""
    if not system_ids:
        return {}
    rows = session.execute(select(ArSystem.system_id, AdvanceReservation).join(
        AdvanceReservation, AdvanceReservation.id == ArSystem.ar_id).where(
        ArSystem.system_id.in_(system_ids), AdvanceReservation.state.in_(advance_rules.ACTIVE))
        .order_by(AdvanceReservation.start_at)).unique().all()
    found: dict[int, list[dict]] = {}
    for system_id, ar in rows:
        found.setdefault(system_id, []).append({"id": ar.id, "name": ar.name, "state": ar.state,
                                                "start": format_time(ar.start_at), "end": format_time(ar.end_at)})
    return found


def load_guests(session, recipe_set: RecipeSet) -> RecipeSet:
    """Every recipe's guests in one query (Recipe.guests is loaded when used: one query per recipe, each
    flushing first, when placing a set or rolling up its status)."""
    unloaded = [r for r in recipe_set.recipes if "guests" not in r.__dict__]
    if unloaded:
        found: dict[int, list[Recipe]] = {r.id: [] for r in unloaded}
        for guest in session.execute(select(Recipe).where(Recipe.host_recipe_id.in_(found))
                                     .order_by(Recipe.id)).unique().scalars():
            found[guest.host_recipe_id].append(guest)
        for recipe in unloaded:
            set_committed_value(recipe, "guests", found[recipe.id])
    return recipe_set


def attribute_keys_in_use(session, keys: set[str]) -> set[str]:
    """Those of `keys` that some system's attributes name: one query per key, the database reading the JSON
    (reading every system's attributes into Python had cost a 10,000-system lab ~0.3 s per job submitted)."""
    found = set()
    for key in keys:
        if session.get_bind().dialect.name == "postgresql":
            named = System.attributes.op("?")(key)  # jsonb: has this top-level key
        else:
            each = func.json_each(System.attributes).table_valued("key")
            named = exists(select(each.c.key).where(each.c.key == key))
        if session.execute(select(System.id).where(named).limit(1)).first():
            found.add(key)
    return found
