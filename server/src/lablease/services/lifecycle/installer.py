"""The installer's side of an installation: its kickstart, and its callbacks moving installation, system
and recipe through installing to running. Authorised by the installation's own token, never a user's."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from ...domain.errors import Conflict, Forbidden
from ...domain.returns import UNFINISHED_INSTALLATION
from ...store.provision_tables import Installation
from ..provisioning import commands, installations
from ..queue import placement
from ..records import activity, usage

# Once the installation is over (the installed system runs, or it ended) its token opens nothing: a leaked
# kickstart or boot line cannot fetch the rendered kickstart again nor replay a callback (docs/provisioning.md).
OVER = ("running", "completed", "failed", "cancelled")

# event -> (states it may come in, state it leads to); a repeated event is accepted and changes nothing
# while the installation is still under way.
TRANSITIONS = {
    "install_start": (("queued",), "installing"),
    "install_done": (("queued", "installing"), "installed"),
    "postinstall_done": (("installed",), "running"),
    "install_fail": (UNFINISHED_INSTALLATION, "failed"),
}


def _authorised(uow, installation_id: int, token: str | None) -> Installation:
    """The installation its token opens: every installer endpoint asks here, so none outlives the install."""
    installation = installations.authorised(uow.settings, uow.session.get(Installation, installation_id), token)
    if installation.status in OVER:
        raise Forbidden(f"installation {installation.id} is {installation.status}; its token no longer works")
    return installation


def kickstart(uow, installation_id: int, token: str | None) -> str:
    installation = _authorised(uow, installation_id, token)
    return installation.kickstart.replace(installations.TOKEN_MARK, token)


def callback(uow, now: datetime, installation_id: int, token: str | None, event: str) -> None:
    settings = uow.settings
    installation = _authorised(uow, installation_id, token)
    allowed_from, target = TRANSITIONS[event]
    if installation.status == target:
        return  # the installer retried a call that already arrived
    if installation.status not in allowed_from:
        raise Conflict(f"{event} cannot come while installation {installation.id} is {installation.status}")
    activity.record(uow, None, now, "system", installation.system.fqdn, event, "installation",
                    installation.status, target)
    if event == "install_fail":
        installations.fail(uow, installation, now, "the installer reported a failure (install_fail)")
        return
    installation.status = target
    installation.watchdog_at = now + settings.install_timeout
    uow.wake_worker()
    {"install_start": _started, "install_done": _installed, "postinstall_done": _running}[event](
        uow, installation, now)


def _started(uow, installation: Installation, now: datetime) -> None:
    installation.started_at = now
    usage.set_usage(uow, installation.system, "installing", now)
    recipe = installations.recipe_of(uow, installation)
    if recipe is not None and recipe.status == "waiting":
        recipe.status = "installing"
        placement.refresh_rollups(uow, recipe.recipe_set, now)


def _installed(uow, installation: Installation, now: datetime) -> None:
    installation.installed_at = now
    # The next boot must reach the installed system, not install again.
    commands.enqueue(uow, installation.system, "netboot_local", now, installation.user_id, installation.id)


def _running(uow, installation: Installation, now: datetime) -> None:
    installation.finished_at, installation.watchdog_at = now, None
    usage.set_usage(uow, installation.system, "running", now)
    recipe = installations.recipe_of(uow, installation)
    if recipe is not None and recipe.status in ("waiting", "installing"):
        placement.begin_running(uow, recipe, now)
        placement.refresh_rollups(uow, recipe.recipe_set, now)


def latest_for_recipe(uow, recipe_id: int) -> int | None:
    """The recipe's latest installation (None when the recipe has none, or does not exist)."""
    return uow.session.execute(select(Installation.id).where(Installation.recipe_id == recipe_id)
                           .order_by(Installation.id.desc()).limit(1)).scalar_one_or_none()
