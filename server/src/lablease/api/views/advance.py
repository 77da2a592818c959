"""/advance-reservations: qrsub, qrstat, qralter, qrdel, and accounting."""
from ...domain.paging import Page
from ...services.calendar import advance, advance_reports
from .context import Context, Reply


def create(ctx: Context) -> Reply:
    body, status = advance.create(ctx.uow, ctx.actor, ctx.now, advance.parse_request(ctx.body, ctx.actor.name, ctx.now))
    return Reply(body, status)


def listing(ctx: Context) -> Page:
    return advance.listing(ctx.uow, ctx.actor, ctx.query.get("user"), ctx.page)


def show(ctx: Context) -> dict:
    return advance.get(ctx.uow, ctx.actor, ctx.args["ident"], bool(ctx.query.get("explain")))


def update(ctx: Context) -> dict:
    return advance.modify(ctx.uow, ctx.actor, ctx.now, ctx.args["ident"], advance.parse_change(ctx.body))


def remove(ctx: Context) -> None:
    advance.delete(ctx.uow, ctx.actor, ctx.now, ctx.args["ident"], bool(ctx.query.get("force")))


def accounting(ctx: Context) -> dict:
    return advance_reports.accounting(ctx.uow, ctx.actor, ctx.now, ctx.args["ident"])
