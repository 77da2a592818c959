"""Architectures as data (as Beaker's): the site's list, which administrators extend.

Systems, distro trees, arch health checks, and the arch leaves of host filters (jobs, advance
reservations) name an arch of this list; the database holds it for systems and distro trees (their
arch is a foreign key to arches.name, migration 0028).
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from ...domain.errors import Conflict, Forbidden
from ...domain.paging import Page, PageRequest
from ...domain.permissions import Actor, SiteAction, decide_site
from ...domain.systems import check_arch, check_arch_name
from ...domain.times import format_time
from ...store import paging
from ...store.paging import Order
from ...store.tables import Arch
from ..records import activity


def known(uow) -> frozenset[str]:
    return frozenset(uow.session.execute(select(Arch.name)).scalars())


def check(uow, arch, field: str = "arch") -> str:
    """`arch` when the site knows it, else Invalid naming the known ones."""
    return check_arch(arch, known(uow), field)


def check_named(uow, arches, field: str) -> None:
    """Each of `arches` (e.g. a host filter's arch = values) is known, or Invalid naming the first that is not."""
    if not arches:  # most filters name none: no query
        return
    names = known(uow)
    for arch in sorted(arches):
        check_arch(arch, names, field)


def listing(uow, page: PageRequest) -> Page:
    found = paging.fetch(uow, "arches", select(Arch), [Order(Arch.name)], page)
    return Page([as_dict(arch) for arch in found.items], found.next_after)


def every(uow) -> list[dict]:
    """Every arch, by name (`lablease-server arch list`: the list is short)."""
    return [as_dict(arch) for arch in uow.session.execute(select(Arch).order_by(Arch.name)).scalars()]


def add(uow, actor: Actor, now: datetime, name) -> dict:
    decision = decide_site(actor, SiteAction.ADD_SYSTEM)
    if not decision:
        raise Forbidden("only administrators may add architectures")
    session = uow.session
    name = check_arch_name(name)
    if session.get(Arch, name) is not None:
        raise Conflict(f"architecture {name} already exists")
    arch = Arch(name=name, created_at=now)
    session.add(arch)
    session.flush()
    activity.record(uow, actor, now, "arch", name, "created")
    return as_dict(arch)


def as_dict(arch: Arch) -> dict:
    return {"name": arch.name, "created_at": format_time(arch.created_at) if arch.created_at else None}
