"""The iCalendar feed of a person's reservations and loans, at a secret per-user URL."""
from werkzeug.wrappers import Response

from ...domain.paging import MAX_LIMIT, PageRequest
from ...services.lifecycle import loans, reservations
from ...services.auth import signin
from ..context import PageContext, Redirect
from ..ical import feed as build_feed


def rotate(ctx: PageContext) -> Redirect:
    signin.calendar_token(ctx.uow, ctx.actor, rotate=True)
    return Redirect("/reservations", "Your calendar has a new address; the old one no longer works.")


def feed(ctx: PageContext) -> Response:
    owner = signin.calendar_owner(ctx.uow, ctx.args["user"], ctx.args["token"])
    held = [r for r in reservations.list_reservations(ctx.uow, owner, ctx.now, user="me", active=True,
                                                      page=PageRequest(MAX_LIMIT)).items  # a person holds far fewer
            if r["system"] is not None]  # one still waiting in the queue has no system nor window yet
    lent = loans.lent_to(ctx.uow, owner, ctx.now)
    body = build_feed(owner.name, held, lent, ctx.now)
    return Response(body, mimetype="text/calendar", headers={"Content-Disposition": "inline; filename=lablease.ics"})
