"""/pools and /pools/<name>: the pools, and a pool's timeline (one row per system, one bar per booking)."""
from urllib.parse import urlencode

from ...services.catalog import pools
from ...services.reads import timeline as timeline_service
from ..context import PageContext
from ..timeline import values, window
from . import forms


def listing(ctx: PageContext):
    return ctx.render("pools.html", pools=pools.summaries(ctx.uow))


def show(ctx: PageContext):
    start, end, asked = window(ctx)
    data = timeline_service.for_pool(ctx.uow, ctx.actor, ctx.now, ctx.args["name"], start, end,
                                     forms.whole(ctx.query, "page"))
    path = ctx.path.split("?")[0]
    kept = {k: v for k, v in asked.items() if v and (k != "span" or not (asked["start"] or asked["end"]))}
    return ctx.render("pool.html", tl=values(data.pop("chart"), asked, path), pager_query=urlencode(kept), **data)
