"""Distro trees (admins register them) and matching jobs' distroRequires against them."""
from __future__ import annotations

import json

from datetime import datetime

from sqlalchemy import select

from ...domain.boot_text import check_options, first_unfit
from ...domain.errors import Conflict, Forbidden, Invalid, NotFound
from ...domain.events import DistroTreeRemoved
from ...domain.paging import Page, PageRequest
from ...domain.permissions import Actor, SiteAction, decide_site
from ...domain.times import format_time
from ...domain.variables import masked_ks_meta
from ...jobxml.fields import UNACTED_DISTRO_FIELDS
from ...scheduler.filters import compare
from ...store import paging
from ...store.paging import Order
from ...store.tables import DistroTree
from ..records import activity
from . import arches

FIELDS = {"distro_name": "name", "distro_family": "family", "distro_arch": "arch", "distro_variant": "variant"}


def as_dict(tree: DistroTree, patterns: tuple[str, ...] = ()) -> dict:
    """A distro tree; secret ks_meta values masked (domain/variables.py)."""
    return {"id": tree.id, "name": tree.name, "family": tree.family, "arch": tree.arch, "variant": tree.variant,
            "tags": tree.tags or [], "url": tree.url, "kernel": tree.kernel, "initrd": tree.initrd,
            "ks_meta": masked_ks_meta(tree.ks_meta, patterns), "kernel_options": tree.kernel_options, "labs": tree.labs or [],
            "created_at": format_time(tree.created_at)}


def _check_boot_text(data: dict) -> None:
    """Every field of a tree reaches a netboot file or a kickstart: each must fit on one line, and its
    ks_meta and kernel options must parse (domain/boot_text.py, the rule the writers apply too)."""
    unfit = first_unfit(data, "")
    if unfit is not None:
        raise Invalid(*unfit)
    for key, what in (("ks_meta", "ks_meta"), ("kernel_options", "kernel options")):
        try:
            check_options(data.get(key), what)
        except ValueError as error:
            raise Invalid(key, str(error)) from None


def add(uow, actor: Actor, now: datetime, data: dict) -> dict:
    decision = decide_site(actor, SiteAction.ADD_SYSTEM)
    if not decision:
        raise Forbidden("only administrators may register distro trees")
    session = uow.session
    arches.check(uow, data["arch"])
    _check_boot_text(data)
    duplicate = session.execute(select(DistroTree.id).where(
        DistroTree.name == data["name"], DistroTree.arch == data["arch"],
        DistroTree.variant == data.get("variant"))).first()
    if duplicate:
        raise Conflict(f"distro tree {data['name']} {data['arch']} {data.get('variant') or ''} already exists".strip())
    tree = DistroTree(created_at=now, **{k: data.get(k) for k in (
        "name", "family", "arch", "variant", "url", "kernel", "initrd", "ks_meta", "kernel_options")},
        tags=data.get("tags", []), labs=data.get("labs", []))
    session.add(tree)
    session.flush()
    activity.record(uow, actor, now, "distro_tree", tree.id, "created", "name", None, tree.name)
    return as_dict(tree, uow.settings.secret_variables)


def listing(uow, filters: dict, page: PageRequest) -> Page:
    query = select(DistroTree)
    for key in ("name", "family", "arch", "variant"):
        if filters.get(key):
            query = query.where(getattr(DistroTree, key) == filters[key])
    found = paging.fetch(uow, "distro-trees", query,
                         [Order(DistroTree.name), Order(DistroTree.arch), Order(DistroTree.id)], page)
    return Page([as_dict(t, uow.settings.secret_variables) for t in found.items], found.next_after)


def get(uow, tree_id: int) -> dict:
    tree = uow.session.get(DistroTree, tree_id)
    if tree is None:
        raise NotFound(f"no distro tree {tree_id}")
    return as_dict(tree, uow.settings.secret_variables)


EDITABLE = ("family", "tags", "url", "kernel", "initrd", "ks_meta", "kernel_options", "labs")


def update(uow, actor: Actor, now: datetime, tree_id: int, data: dict) -> dict:
    """Change what a tree points at or its defaults; installations already made keep what they used."""
    if not actor.is_admin:
        raise Forbidden("only administrators may change distro trees")
    tree = uow.session.get(DistroTree, tree_id)
    if tree is None:
        raise NotFound(f"no distro tree {tree_id}")
    _check_boot_text(data)
    changes = {}
    for key in EDITABLE:
        if key in data and data[key] != getattr(tree, key):
            changes[key] = (getattr(tree, key), data[key])
            if key == "ks_meta":  # the activity log keeps no secret either
                changes[key] = tuple(masked_ks_meta(v, uow.settings.secret_variables) for v in changes[key])
            setattr(tree, key, data[key])
    activity.record_changes(uow, actor, now, "distro_tree", tree.id, changes)
    return as_dict(tree, uow.settings.secret_variables)


def remove(uow, actor: Actor, now: datetime, tree_id: int) -> None:
    if not actor.is_admin:
        raise Forbidden("only administrators may remove distro trees")
    tree = uow.session.get(DistroTree, tree_id)
    if tree is None:
        raise NotFound(f"no distro tree {tree_id}")
    uow.session.delete(tree)
    activity.record(uow, actor, now, "distro_tree", tree_id, "deleted", "name", tree.name, None)
    uow.emit(DistroTreeRemoved(tree_id, now))  # recipes waiting for it are aborted at once


def _tree_matches(tree: dict | None, distro: DistroTree) -> bool:
    if not tree:
        return True
    if "and" in tree:
        return all(_tree_matches(t, distro) for t in tree["and"])
    if "or" in tree:
        return any(_tree_matches(t, distro) for t in tree["or"])
    if "not" in tree:
        return not _tree_matches(tree["not"], distro)
    if tree["field"] == "distro_tag":
        wanted = tree["value"] in (distro.tags or [])
        return wanted if tree["op"] != "!=" else not wanted
    if tree["field"] == "distro_lab":  # available in that lab; a tree with no labs is available in every lab
        op = "=" if tree["op"] == "!=" else tree["op"]
        available = not distro.labs or any(compare(op, lab, tree["value"]) for lab in distro.labs)
        return available if tree["op"] != "!=" else not available
    if tree["field"] in UNACTED_DISTRO_FIELDS:  # kept with a warning (docs/jobs.md)
        return True
    return compare(tree["op"], getattr(distro, FIELDS[tree["field"]]), tree["value"])


def matching(uow, tree: dict) -> list[DistroTree]:
    """Distro trees satisfying a distroRequires tree, newest first."""
    trees = uow.session.execute(select(DistroTree).order_by(DistroTree.created_at.desc(), DistroTree.id.desc()))
    return [t for t in trees.scalars() if _tree_matches(tree, t)]


def matcher(uow):
    """A function from distroRequires trees to their matching distro trees (as `matching`), reading the distro
    trees once however many recipes ask: a job's recipes mostly ask the same."""
    trees = list(uow.session.execute(select(DistroTree).order_by(DistroTree.created_at.desc(), DistroTree.id.desc()))
                 .scalars())
    found: dict[str, list[DistroTree]] = {}

    def match(tree: dict) -> list[DistroTree]:
        key = json.dumps(tree, sort_keys=True)
        if key not in found:
            found[key] = [t for t in trees if _tree_matches(tree, t)]
        return found[key]
    return match


def matching_trees(uow, tree: dict | None) -> list[dict]:
    """The distro trees satisfying a distroRequires tree (every tree without one), newest first, as shown."""
    return [as_dict(t, uow.settings.secret_variables) for t in matching(uow, tree)]


def require_match(uow, tree: dict, where: str) -> list[DistroTree]:
    found = matching(uow, tree)
    if not found:
        raise Invalid(where, "no distro tree matches distroRequires")
    return found
