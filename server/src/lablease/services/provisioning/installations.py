"""Installations: turning a reservation or a scheduled recipe into an installed system.

provision -> kickstart rendered (sandboxed jinja2) and stored -> commands
queued: netboot configured, then a reboot -> the installer calls back
install_start, install_done (netboot rewritten to boot the local disk),
postinstall_done (first boot: running; services/lifecycle/installer.py takes the
callbacks). install_fail, a command that keeps
failing, or no callback within `install_timeout` fail it; a failed
installation aborts its recipe and tells the holder.

Each installation has a secret token, embedded in its kickstart URL and
callback URLs. It is never stored: it is an HMAC of the installation's id
and a random nonce under the site key, so a database reader cannot forge
callbacks, and an old installation's token stops working once it is over.
"""
from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from sqlalchemy import or_, select
from sqlalchemy.orm import object_session

from ...domain.boot_text import check_options, merge_kernel_options, merge_ks_meta
from ...domain.errors import Conflict, Forbidden, Invalid, NotFound
from ...domain.events import InstallationCommandFailed, RecipeAborted, ReservationClosed
from ...domain.guests import guest_mac
from ...domain.paging import Page, PageRequest
from ...domain.permissions import Actor, may_see_installation
from ...domain.returns import RELEASED, UNFINISHED_INSTALLATION, SystemAtEnd, release, resets_usage
from ...domain.times import format_human, format_time
from ...domain.variables import masked_ks_meta, masked_text, secret_values
from ...provision.kickstart import KickstartError, KickstartRenderer
from ...provision.netboot import BootImage
from ...store import paging
from ...store.paging import Order
from ...store.provision_tables import Installation
from ...store.secrets import site_key
from ...store.tables import DistroTree, Recipe, Reservation, System
from ..catalog import distros, health_state
from ..catalog.systems import current_reservations, find
from ..messages import notices
from ..records import activity, due, usage
from . import commands

EVENTS = ("install_start", "install_done", "postinstall_done", "install_fail")
# running: the system runs it now; completed: it did, until its reservation ended or it was replaced.
TOKEN_MARK = "@@installation-token@@"  # stands for the token in the stored kickstart


# --- tokens ---------------------------------------------------------------------------------------

def token_for(settings, installation: Installation) -> str:
    message = f"installation:{installation.id}:{installation.nonce}".encode()
    digest = hmac.new(site_key(settings), message, hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


# The shape of every token token_for makes (URL-safe base64); anything else is refused before
# comparing, since hmac.compare_digest raises on non-ASCII text (e.g. ?token=%C3%A9).
TOKEN_SHAPE = re.compile(r"[A-Za-z0-9_-]{1,128}")


def authorised(settings, installation: Installation | None, token: str | None) -> Installation:
    if (installation is None or not token or not TOKEN_SHAPE.fullmatch(token)
            or not hmac.compare_digest(token_for(settings, installation), token)):
        raise Forbidden("invalid installation token")
    return installation


# --- answers --------------------------------------------------------------------------------------

def as_dict(installation: Installation, patterns: tuple[str, ...] = (), with_kickstart: bool = False) -> dict:
    """An installation as its people see it: secret variables (domain/variables.py) masked everywhere."""
    distro = installation.distro or {}
    out = {"id": installation.id, "system": installation.system.fqdn,
           "user": installation.user.name if installation.user else None,
           "reservation": installation.reservation_id, "recipe": installation.recipe_id,
           "distro_tree": {k: distro.get(k) for k in ("id", "name", "arch", "variant")},
           "ks_meta": masked_ks_meta(installation.ks_meta, patterns), "kernel_options": installation.kernel_options,
           "status": installation.status, "error": installation.error,
           "created_at": format_time(installation.created_at), "started_at": format_time(installation.started_at),
           "installed_at": format_time(installation.installed_at),
           "finished_at": format_time(installation.finished_at)}
    if with_kickstart:
        shown = masked_text(installation.kickstart, secret_values(_meta_of(installation), patterns))
        out["kickstart"] = shown.replace(TOKEN_MARK, "<token>")
    return out


def _meta_of(installation: Installation) -> dict:
    """The variables the kickstart was rendered with, as far as they are known now (the tree's and the
    system's defaults may have changed since; the installation's own are kept)."""
    tree = object_session(installation).get(DistroTree, installation.distro_tree_id)
    try:
        return merge_ks_meta(tree.ks_meta if tree else None, (installation.system.netboot or {}).get("ks_meta"),
                             installation.ks_meta)
    except ValueError:
        return {}


def urls(settings, installation: Installation, token: str) -> dict:
    base = f"{settings.install_url_for(installation.system.lab)}/api/v1/installations/{installation.id}"
    found = {event: f"{base}/{event}?token={token}" for event in EVENTS}
    found["kickstart"] = f"{base}/kickstart?token={token}"
    return found


def _visible(uow, actor: Actor, installation: Installation) -> bool:
    reservation = uow.session.get(Reservation, installation.reservation_id) if installation.reservation_id else None
    return may_see_installation(actor, installation.system.owner_id,
                                (installation.user_id, reservation.user_id if reservation else None))


def get(uow, actor: Actor, installation_id: int) -> dict:
    """GET /installations/{id}: 404 for anybody it is not for (ids are sequential, so nothing tells)."""
    installation = uow.session.get(Installation, installation_id)
    if installation is None or not _visible(uow, actor, installation):
        raise NotFound(f"no installation {installation_id}")
    find(uow, installation.system.fqdn, actor)
    return as_dict(installation, uow.settings.secret_variables, with_kickstart=True)


def listing(uow, actor: Actor, fqdn: str, page: PageRequest) -> Page:
    """A system's installations the caller may see (others' are left out, not masked), newest first."""
    system = find(uow, fqdn, actor)
    query = select(Installation).where(Installation.system_id == system.id)
    if not may_see_installation(actor, system.owner_id, ()):  # then only those for the caller
        query = query.outerjoin(Reservation, Reservation.id == Installation.reservation_id).where(
            or_(Installation.user_id == actor.id, Reservation.user_id == actor.id))
    found = paging.fetch(uow, "installations", query, [Order(Installation.id, descending=True)], page)
    return Page([as_dict(i, uow.settings.secret_variables) for i in found.items], found.next_after)


# --- starting -------------------------------------------------------------------------------------

def provision(uow, actor: Actor, now: datetime, fqdn: str, data: dict) -> dict:
    """POST /systems/{fqdn}/provision by the current holder: 202 with the installation and its kickstart URL."""
    settings = uow.settings
    system = find(uow, fqdn, actor)
    reservation = current_reservations(uow, [system.id], now).get(system.id)
    if reservation is None or reservation.user_id != actor.id:
        raise Forbidden(f"only the current holder of {system.fqdn} may provision it; reserve it first")
    if reservation.kind != "manual":
        raise Conflict(f"{system.fqdn} is running a recipe, which provisions it itself")
    tree = _choose_tree(uow, system, data)
    own = {key: data[key] for key in ("kickstart", "kernel_options_post") if data.get(key)}
    if "kickstart" in own:
        _may_bring_kickstart(settings, actor.is_admin, actor.id, system)
    installation = start(uow, system, Install(
        tree, actor.id, reservation.id, ks_meta=data.get("ks_meta", ""), kernel_options=data.get("kernel_options", ""),
        own=own or None), now)
    usage.set_usage(uow, system, "waiting", now)
    activity.record(uow, actor, now, "system", system.fqdn, "provision", "installation", None,
                    f"{installation.id}: {tree.name} {tree.arch}")
    answer = as_dict(installation, settings.secret_variables)
    answer["kickstart_url"] = urls(settings, installation, token_for(settings, installation))["kickstart"]
    return answer


def _choose_tree(uow, system: System, data: dict) -> DistroTree:
    session = uow.session
    wanted = data["distro_tree"]
    if isinstance(wanted, int):
        tree = session.get(DistroTree, wanted)
        if tree is None:
            raise Invalid("distro_tree", f"no distro tree {wanted}")
    else:
        arch = data.get("arch") or system.arch
        query = select(DistroTree).where(DistroTree.name == wanted, DistroTree.arch == arch)
        if data.get("variant"):
            query = query.where(DistroTree.variant == data["variant"])
        found = list(session.execute(query).scalars())
        if not found:
            raise Invalid("distro_tree", f"no distro tree {wanted} for {arch}")
        if len(found) > 1:
            variants = ", ".join(sorted(t.variant or "(none)" for t in found))
            raise Invalid("variant", f"{wanted} {arch} has several variants ({variants}); say which")
        tree = found[0]
    if tree.arch != system.arch:
        raise Invalid("distro_tree", f"{tree.name} is for {tree.arch}, {system.fqdn} is {system.arch}")
    if tree.labs and system.lab not in tree.labs:
        raise Invalid("distro_tree", f"{tree.name} is not available in lab {system.lab or '(none)'}")
    return tree


def _check_installable(system: System) -> None:
    if not commands.has_power(system):
        raise Conflict(f"{system.fqdn} has no power driver configured, so it cannot be provisioned")
    if not (system.netboot or {}).get("mac"):
        raise Conflict(f"{system.fqdn} has no netboot MAC address, so it cannot be provisioned")


@dataclass(frozen=True)
class Install:
    """What to install and for whom: a holder's provision request, a recipe's distro, a reprovision release."""

    tree: DistroTree
    user_id: int | None  # who is told of a failure (None: the server's own, as a release action's)
    reservation_id: int | None
    recipe: Recipe | None = None
    ks_meta: str = ""
    kernel_options: str = ""
    own: dict | None = None  # a reserved system's holder's kickstart template and kernel_options_post


def start(uow, system: System, what: Install, now: datetime) -> Installation:
    """Create the installation, render and store its kickstart, and queue netboot + reboot (a guest recipe's
    virtual machine has neither: its host's harness boots it with the kickstart URL, services/provisioning/guests.py)."""
    session, settings = uow.session, uow.settings
    tree, recipe = what.tree, what.recipe
    if not system.guest:
        _check_installable(system)
    netboot = system.netboot or {}
    meta = _merged(merge_ks_meta, "ks_meta", (("ks_meta", what.ks_meta), ("netboot.ks_meta", netboot.get("ks_meta")),
                                               (f"distro tree {tree.id} ks_meta", tree.ks_meta)))
    options = _merged(merge_kernel_options, "kernel options", (
        ("kernel_options", what.kernel_options), ("netboot.kernel_options", netboot.get("kernel_options")),
        (f"distro tree {tree.id} kernel_options", tree.kernel_options)))
    for previous in _unfinished(uow, system):
        _end(uow, previous, now, "cancelled", f"superseded by a new installation at {format_time(now)}")
    for previous in _in_use(uow, system):
        previous.status = "completed"  # the system will run something else
    installation = Installation(
        system_id=system.id, user_id=what.user_id, reservation_id=what.reservation_id,
        recipe_id=recipe.id if recipe else None, distro_tree_id=tree.id,
        distro={**_snapshot(tree), "boot_options": options},
        ks_meta=what.ks_meta or "", kernel_options=what.kernel_options or "", kickstart="", nonce=secrets.token_hex(16),
        status="queued", created_at=now, watchdog_at=now + settings.install_timeout)
    session.add(installation)
    session.flush()
    session.refresh(installation, ["system", "user"])
    token = token_for(settings, installation)
    try:
        rendered = _renderer(settings).render(_context(settings, system, installation, recipe, meta, token, what.own))
    except KickstartError as error:
        raise Invalid("kickstart", str(error)) from None
    installation.kickstart = rendered.replace(token, TOKEN_MARK)
    _check_boot_image(uow, installation)
    if not system.guest:
        commands.enqueue(uow, system, "netboot_install", now, what.user_id, installation.id)
        commands.enqueue(uow, system, "reboot", now, what.user_id, installation.id)
    uow.wake_worker()
    return installation


def _merged(merge, what: str, sources: tuple):
    """ks_meta or kernel options from (field, text) sources, the request's first: each is checked on its
    own so the error names the one at fault; merged the tree's first, then the system's, then the request's."""
    for field, text in sources:
        try:
            check_options(text, what)
        except ValueError as error:
            raise Invalid(field, str(error)) from None
    return merge(*(text for _, text in reversed(sources)))


def _check_boot_image(uow, installation: Installation) -> None:
    """What the netboot writer will be given passes its rule now, or the request is refused."""
    try:
        boot_image(uow, installation)
    except ValueError as error:
        raise Invalid("kernel_options" if str(error).startswith("kernel_options") else "distro_tree",
                      str(error)) from None


def for_recipe(uow, recipe: Recipe, system: System, now: datetime) -> None:
    """A recipe with a distro reached its system: install it, or abort the recipe saying why."""
    settings = uow.settings
    try:
        _check_own_kickstart(settings, recipe, system)
        tree = _recipe_tree(uow, recipe, system)
        start(uow, system, Install(
            tree, recipe.recipe_set.job.owner_id, recipe.reservation_id, recipe, recipe.spec.get("ks_meta", ""),
            recipe.spec.get("kernel_options", "")), now)
    except (Conflict, Invalid) as error:
        _abort_recipe(uow, recipe, now, f"cannot provision {system.fqdn}: {error}")


def _check_own_kickstart(settings, recipe: Recipe, system: System) -> None:
    """A job's own <kickstart> is used only where the site allows it (setting job_kickstarts)."""
    if recipe.spec.get("kickstart") is None:
        return
    owner = recipe.recipe_set.job.owner
    _may_bring_kickstart(settings, owner.is_admin, owner.id, system, "the job's own <kickstart>")


def _may_bring_kickstart(settings, is_admin: bool, user_id: int, system: System,
                         what: str = "a kickstart of your own") -> None:
    """A kickstart template of the user's own (a job's <kickstart>, or one given provisioning a reserved
    system) is used only where the site allows it (setting job_kickstarts)."""
    if settings.job_kickstarts == "everyone":
        return
    if settings.job_kickstarts == "admins_and_owners" and (is_admin or system.owner_id == user_id):
        return
    who = "nobody" if settings.job_kickstarts == "nobody" else "administrators and the system's owner"
    raise Conflict(f"{what} is allowed only to {who} (setting job_kickstarts)")


def _recipe_tree(uow, recipe: Recipe, system: System) -> DistroTree:
    for tree in distros.matching(uow, recipe.spec["distro_requires"]):
        if tree.arch == system.arch and (not tree.labs or system.lab in tree.labs):
            return tree
    raise Conflict(f"no distro tree matching the recipe's distroRequires for {system.arch} in lab {system.lab}")


def _snapshot(tree: DistroTree) -> dict:
    return {"id": tree.id, "name": tree.name, "family": tree.family, "arch": tree.arch, "variant": tree.variant,
            "url": tree.url, "kernel": tree.kernel, "initrd": tree.initrd}


_RENDERERS: dict[Path, KickstartRenderer] = {}


def _renderer(settings) -> KickstartRenderer:
    directory = settings.kickstart_path
    if directory not in _RENDERERS:
        _RENDERERS[directory] = KickstartRenderer(directory)
    return _RENDERERS[directory]


def _context(settings, system: System, installation: Installation, recipe: Recipe | None, meta: dict,
             token: str, own: dict | None = None) -> dict:
    links = urls(settings, installation, token)
    return {
        "system": {"fqdn": system.fqdn, "arch": system.arch, "lab": system.lab, "cpus": system.cpus,
                   "memory_mb": system.memory_mb, "attributes": dict(system.attributes or {}),
                   "mac": guest_mac(system.id) if system.guest else (system.netboot or {}).get("mac")},
        "distro": dict(installation.distro),
        "recipe": _recipe_context(recipe) if recipe else None,
        "provision": {"kickstart": (own or {}).get("kickstart"),
                      "kernel_options_post": (own or {}).get("kernel_options_post", "")} if own else None,
        "installation": {"id": installation.id},
        "ks_meta": meta, "kernel_options": installation.distro.get("boot_options", ""),
        "server_url": settings.install_url_for(system.lab), "kickstart_url": links["kickstart"],
        "callbacks": {event: links[event] for event in EVENTS},
    }


def _recipe_context(recipe: Recipe) -> dict:
    """What a kickstart template sees of its recipe: ids, and the job's kickstart customisation."""
    spec = recipe.spec
    return {
        # A whiteboard is free text, possibly several lines: the kickstart gets it as one line.
        "id": recipe.id, "job_id": recipe.job_id, "whiteboard": " ".join(spec.get("whiteboard", "").split()),
        "kernel_options_post": spec.get("kernel_options_post", ""), "packages": list(spec.get("packages", [])),
        "repos": [dict(repo) for repo in spec.get("repos", [])],
        "partitions": [dict(partition) for partition in spec.get("partitions", [])],
        "ks_appends": list(spec.get("ks_appends", [])), "kickstart": spec.get("kickstart"),
    }


def _join(base: str, path: str) -> str:
    return path if "://" in path else f"{base.rstrip('/')}/{path.lstrip('/')}"


def boot_image(uow, installation: Installation) -> BootImage:
    """What the netboot config of this installation boots: its tree's kernel, with the kickstart URL."""
    settings = uow.settings
    distro = installation.distro
    kickstart = urls(settings, installation, token_for(settings, installation))["kickstart"]
    options = " ".join(filter(None, (distro.get("boot_options"), f"inst.ks={kickstart}")))
    return BootImage(_join(distro["url"], distro["kernel"]), _join(distro["url"], distro["initrd"]), options)


def recipe_of(uow, installation: Installation) -> Recipe | None:
    return uow.session.get(Recipe, installation.recipe_id) if installation.recipe_id else None


# --- ending ---------------------------------------------------------------------------------------

def _unfinished(uow, system: System) -> list[Installation]:
    return list(uow.session.execute(select(Installation).where(
        Installation.system_id == system.id, Installation.status.in_(UNFINISHED_INSTALLATION))).unique().scalars())


def _in_use(uow, system: System) -> list[Installation]:
    return list(uow.session.execute(select(Installation).where(
        Installation.system_id == system.id, Installation.status == "running")).unique().scalars())


def _end(uow, installation: Installation, now: datetime, status: str, why: str) -> None:
    installation.status, installation.error = status, why
    installation.finished_at, installation.watchdog_at = now, None
    activity.record(uow, None, now, "system", installation.system.fqdn, f"installation_{status}",
                    "installation", installation.id, why)


def fail(uow, installation: Installation, now: datetime, why: str) -> None:
    """An installation failed: the recipe is aborted, a manual holder keeps the system (idle) and is told."""
    _end(uow, installation, now, "failed", why)
    if (installation.system.netboot or {}).get("mac"):
        # Its token is dead: the next boot must not start an installer that cannot fetch its kickstart.
        commands.enqueue(uow, installation.system, "netboot_clear", now)
    recipe = recipe_of(uow, installation)
    if recipe is not None and recipe.status not in ("completed", "cancelled", "aborted"):
        _abort_recipe(uow, recipe, now, f"installation {installation.id} failed: {why}")
    elif resets_usage(installation.system.usage):
        usage.set_usage(uow, installation.system, "idle", now)
    health_state.install_failed(uow, installation.system, now)
    if installation.user is not None:
        notices.installation_failed(uow, installation.user, installation.system.fqdn,
                                    installation.id, why, now)


def _abort_recipe(uow, recipe: Recipe, now: datetime, why: str) -> None:
    uow.emit(RecipeAborted(recipe.id, now, why))  # jobs finishes it and refreshes its set


def fail_current(uow, system: System, now: datetime, why: str) -> None:
    for installation in _unfinished(uow, system):
        fail(uow, installation, now, why)


def _abort_stalled(uow, installation: Installation, now: datetime) -> None:
    """The install watchdog: no callback within install_timeout fails the installation."""
    waited = format_human(uow.settings.install_timeout)
    fail(uow, installation, now,
         f"no progress from the installer for {waited} (still {installation.status})")


STALLED = due.Step("installation_watchdog", "failed stalled installation", Installation,
                   Installation.watchdog_at, Installation.status.in_(UNFINISHED_INSTALLATION), _abort_stalled)


def on_command_failed(uow, event: InstallationCommandFailed) -> None:
    """A command failed for good or was cancelled: the installation it served fails (or, when it
    served none, whatever the system was installing)."""
    session = uow.session
    if event.installation_id is None:
        fail_current(uow, session.get(System, event.system_id), event.now, event.why)
        return
    installation = session.get(Installation, event.installation_id)
    if installation is not None and installation.status in UNFINISHED_INSTALLATION:
        fail(uow, installation, event.now, event.why)


def on_reservation_closed(uow, event: ReservationClosed) -> None:
    """A reservation ended: its unfinished install stops, netboot is cleared, the release action runs."""
    session, now, reason = uow.session, event.now, event.reason
    reservation = session.get(Reservation, event.reservation_id)
    system = session.get(System, reservation.system_id)
    for installation in _unfinished(uow, system):
        if installation.reservation_id == reservation.id:
            _end(uow, installation, now, "cancelled", "the reservation ended")
    for installation in _in_use(uow, system):
        if installation.reservation_id == reservation.id:
            installation.status = "completed"
    if reason == RELEASED or reservation.start_at > now:
        return  # held while its recipe set waited, or never begun: nothing was done to the system
    at = at_end(system)  # each step as domain/returns.touches_system counts it
    if resets_usage(at.usage):
        usage.set_usage(uow, system, "idle", now)
    if at.netboot_mac:
        commands.enqueue(uow, system, "netboot_clear", now)
    release_action(uow, system, now)


def at_end(system) -> SystemAtEnd:
    """What its reservation's end looks at (domain/returns.py), of a System or a row with its columns."""
    return SystemAtEnd(system.usage, system.condition, system.release_action, commands.has_power(system),
                       bool((system.netboot or {}).get("mac")), system.reprovision_distro_tree_id is not None)


def release_action(uow, system: System, now: datetime) -> None:
    action = release(at_end(system))
    if action == "off":
        commands.enqueue(uow, system, "off", now)
    elif action == "reprovision":
        tree = uow.session.get(DistroTree, system.reprovision_distro_tree_id)
        try:
            start(uow, system, Install(tree, None, None), now)
        except (Conflict, Invalid) as error:
            activity.record(uow, None, now, "system", system.fqdn, "reprovision_failed", "reason", None,
                            str(error))

