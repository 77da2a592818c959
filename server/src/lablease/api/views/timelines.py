"""/pools/{name}/timeline and /systems/{fqdn}/timeline: the bookings the web's timelines draw."""
from ...domain import timeline as rules
from ...services.reads import timeline
from .context import Context


def _window(ctx: Context):
    return rules.window(ctx.query.get("span"), ctx.query.get("start"), ctx.query.get("end"), ctx.now)


def pool(ctx: Context) -> dict:
    start, end = _window(ctx)
    data = timeline.for_pool(ctx.uow, ctx.actor, ctx.now, ctx.args["name"], start, end, ctx.query.get("page") or 1)
    return {"pool": data["pool"]["name"], "page": data["page"], "pages": data["pages"],
            **timeline.as_dict(data["chart"])}


def system(ctx: Context) -> dict:
    start, end = _window(ctx)
    return timeline.as_dict(timeline.for_system(ctx.uow, ctx.actor, ctx.now, ctx.args["fqdn"], start, end))
