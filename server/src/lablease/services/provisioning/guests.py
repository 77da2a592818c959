"""Guest recipes: virtual machines run by their host recipe's system (docs/jobs.md, "Guest recipes").

A guest recipe is a Recipe row whose host_recipe_id names its host, in the
same recipe set. It never enters the scheduler's queue: when its host's set
starts (services/queue/placement.py) each guest gets a guest system record of its
own (System.guest: never scheduled, reserved, lent or picked for an advance
reservation) and a booking on it; once the host recipe runs, each guest gets
its own installation (kickstart, token, callbacks), which the host's harness
uses to start the virtual machine. Its result rolls up into the recipe set
like any recipe's; when its host ends, an unfinished guest ends too.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from ...domain import guests as rules
from ...domain.permissions import Permission
from ...store.provision_tables import Installation
from ...store.tables import AccessRule, Recipe, Resource, System
from ..catalog import distros
from ..records import activity, usage
from . import installations


def new_system(uow, guest: Recipe, host_system: System, now: datetime) -> System | None:
    """The guest's system record, in its host's lab, of the arch its distro trees offer (its host's when
    they can); None when no matching tree is available in that lab."""
    session = uow.session
    trees = [t for t in distros.matching(uow, guest.spec["distro_requires"])
             if not t.labs or host_system.lab in t.labs]
    arch = rules.guest_arch(sorted({t.arch for t in trees}), host_system.arch)
    if arch is None:
        return None
    name = rules.guest_system_name(guest.spec.get("guestname"), guest.id)
    resource = Resource(kind="system", name=name, capacity=1)
    session.add(resource)
    session.flush()
    system = System(fqdn=name, resource_id=resource.id, arch=arch, lab=host_system.lab, condition="automated",
                    usage="idle", owner_id=None, guest=True, created_at=now, attributes={}, power={}, netboot={},
                    rules=[AccessRule(permission=Permission.VIEW.value)])  # visible, as any system is by default
    session.add(system)
    session.flush()
    activity.record(uow, None, now, "system", name, "created", "guest of", None, host_system.fqdn)
    return system


def start_installs(uow, host: Recipe, now: datetime) -> None:
    """The host runs: its harness can start the guests now, so each gets its installation."""
    for guest in host.guests:
        if guest.status != "scheduled":
            continue
        system = uow.session.get(System, guest.system_id)
        guest.status = "waiting"
        usage.set_usage(uow, system, "waiting", now)
        installations.for_recipe(uow, guest, system, now)


def retire(uow, system: System, now: datetime) -> None:
    """A finished guest's virtual machine is gone: its record stays, removed, for history."""
    old, system.condition = system.condition, "removed"
    usage.record_condition(uow, system, old, now)


def refuse(system: System, what: str) -> None:
    """A guest system is its recipe's alone."""
    if system.guest:
        raise rules.not_for_people(system.fqdn, what)


# --- answers --------------------------------------------------------------------------------------

def host_of(uow, guest: Recipe) -> Recipe | None:
    return uow.session.get(Recipe, guest.host_recipe_id) if guest.host_recipe_id else None


def guest_dict(uow, guest: Recipe) -> dict:
    """What a host's harness needs to start the guest: its name and arguments, its MAC, and its
    installation's URLs (kickstart and callbacks, with the installation's token) once it has one."""
    system = guest.system
    return {"guestname": guest.spec.get("guestname"), "guestargs": guest.spec.get("guestargs", ""),
            "mac": rules.guest_mac(system.id) if system is not None else None, "address": None,
            "installation": _installation(uow, guest)}


def _installation(uow, guest: Recipe) -> dict | None:
    installation = uow.session.execute(select(Installation).where(Installation.recipe_id == guest.id)
                                   .order_by(Installation.id.desc()).limit(1)).unique().scalar_one_or_none()
    settings = uow.settings
    if installation is None:
        return None
    links = installations.urls(settings, installation, installations.token_for(settings, installation))
    image = installations.boot_image(uow, installation)  # what a netboot config would boot
    return {"id": installation.id, "status": installation.status, "kickstart_url": links.pop("kickstart"),
            "callbacks": links, "tree_url": installation.distro.get("url"), "kernel_url": image.kernel_url,
            "initrd_url": image.initrd_url, "kernel_options": image.kernel_options}
