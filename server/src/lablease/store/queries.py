"""Read helpers shared by several use cases: what one use case reads of another's rows lives here,
so use cases need not import each other for it."""
from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm.attributes import set_committed_value

from ..domain import advance as advance_rules
from ..domain.times import format_time
from ..scheduler.filters import Host, needs_hardware
from .tables import AdvanceReservation, ArSystem, Recipe, RecipeSet, System


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
