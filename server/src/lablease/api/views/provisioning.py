"""/distro-trees, provisioning, power, commands, and the installer's callbacks."""
from werkzeug.wrappers import Response

from ...domain.errors import NotFound
from ...domain.paging import Page
from ...services.catalog import arches, distros
from ...services.provisioning import commands, installations, labs
from ...services.lifecycle import installer
from .context import Context


def arch_add(ctx: Context) -> dict:
    return arches.add(ctx.uow, ctx.actor, ctx.now, ctx.body["name"])


def arch_list(ctx: Context) -> Page:
    return arches.listing(ctx.uow, ctx.page)


def distro_add(ctx: Context) -> dict:
    return distros.add(ctx.uow, ctx.actor, ctx.now, ctx.body)


def distro_list(ctx: Context) -> Page:
    return distros.listing(ctx.uow, ctx.query, ctx.page)


def distro_show(ctx: Context) -> dict:
    return distros.get(ctx.uow, ctx.args["id"])


def distro_update(ctx: Context) -> dict:
    return distros.update(ctx.uow, ctx.actor, ctx.now, ctx.args["id"], ctx.body)


def distro_remove(ctx: Context) -> None:
    distros.remove(ctx.uow, ctx.actor, ctx.now, ctx.args["id"])


def provision(ctx: Context) -> dict:
    return installations.provision(ctx.uow, ctx.actor, ctx.now, ctx.args["fqdn"], ctx.body)


def installation_list(ctx: Context) -> Page:
    return installations.listing(ctx.uow, ctx.actor, ctx.args["fqdn"], ctx.page)


def installation_show(ctx: Context) -> dict:
    return installations.get(ctx.uow, ctx.actor, ctx.args["id"])


def power(ctx: Context) -> dict:
    return commands.request_power(ctx.uow, ctx.actor, ctx.now, ctx.args["fqdn"], ctx.body["action"])


def command_list(ctx: Context) -> Page:
    return commands.listing(ctx.uow, ctx.actor, ctx.args["fqdn"], ctx.page, ctx.now,
                            ctx.settings.agent_silence_limit)


def command_show(ctx: Context) -> dict:
    return commands.get(ctx.uow, ctx.actor, ctx.args["id"], ctx.now, ctx.settings.agent_silence_limit)


def command_cancel(ctx: Context) -> dict:
    return commands.cancel(ctx.uow, ctx.actor, ctx.now, ctx.args["id"])


# The installer's side: authorised by the installation's token (?token=), not a user's.

def kickstart(ctx: Context) -> Response:
    labs.proxied_for(ctx.uow, ctx.headers.get(labs.AGENT_HEADER), ctx.args["id"])
    text = installer.kickstart(ctx.uow, ctx.args["id"], ctx.query.get("token"))
    return Response(text, mimetype="text/plain")


def callback(ctx: Context) -> None:
    labs.proxied_for(ctx.uow, ctx.headers.get(labs.AGENT_HEADER), ctx.args["id"])
    installer.callback(ctx.uow, ctx.now, ctx.args["id"], ctx.query.get("token"), ctx.args["event"])


def recipe_callback(ctx: Context) -> None:
    """The same callbacks addressed by recipe, as Beaker's installers do: its latest installation."""
    latest = installer.latest_for_recipe(ctx.uow, ctx.args["id"])
    if latest is None:
        raise NotFound(f"recipe {ctx.args['id']} has no installation")
    labs.proxied_for(ctx.uow, ctx.headers.get(labs.AGENT_HEADER), latest)
    installer.callback(ctx.uow, ctx.now, latest, ctx.query.get("token"), ctx.args["event"])
