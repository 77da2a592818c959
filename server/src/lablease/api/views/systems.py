"""/systems"""
from ...services.records import activity
from ...services.catalog import systems
from ...domain.paging import Page
from .context import Context


def create(ctx: Context) -> dict:
    return systems.add_system(ctx.uow, ctx.actor, ctx.now, ctx.body, force=ctx.force)


def listing(ctx: Context) -> Page:
    return systems.list_systems(ctx.uow, ctx.actor, ctx.now, ctx.query, ctx.page)


def show(ctx: Context) -> dict:
    return systems.get_system(ctx.uow, ctx.actor, ctx.now, ctx.args["fqdn"])


def update(ctx: Context) -> dict:
    return systems.update_system(ctx.uow, ctx.actor, ctx.now, ctx.args["fqdn"], ctx.body, force=ctx.force)


def remove(ctx: Context) -> None:
    systems.remove_system(ctx.uow, ctx.actor, ctx.now, ctx.args["fqdn"], bool(ctx.query.get("force")))


def history(ctx: Context) -> Page:
    system = systems.find(ctx.uow, ctx.args["fqdn"], ctx.actor)
    return activity.entries(ctx.uow, "system", system.fqdn, ctx.page)
