"""/health-checks and /systems/{fqdn}/health-check"""
from ...domain.paging import Page
from ...services.lifecycle import health
from ...services.catalog import health_checks
from ..inputs import duration_field
from .context import Context, Reply


def _body(ctx: Context) -> dict:
    body = dict(ctx.body)
    if "every" in body:
        body["every"] = duration_field(body, "every")
    return body


def create(ctx: Context) -> Reply:
    return Reply(health_checks.create(ctx.uow, ctx.actor, ctx.now, _body(ctx)), 201)


def listing(ctx: Context) -> Page:
    return health_checks.listing(ctx.uow, ctx.actor, ctx.page)


def show(ctx: Context) -> dict:
    return health_checks.show(ctx.uow, ctx.actor, ctx.args["name"])


def update(ctx: Context) -> dict:
    return health_checks.update(ctx.uow, ctx.actor, ctx.now, ctx.args["name"], _body(ctx))


def delete(ctx: Context) -> None:
    health_checks.delete(ctx.uow, ctx.actor, ctx.now, ctx.args["name"])


def check_now(ctx: Context) -> Reply:
    return Reply(health.request(ctx.uow, ctx.actor, ctx.now, ctx.args["fqdn"]), 202)
