"""/systems (the landing page) and /systems/<fqdn>, with the actions a system's page offers."""
from urllib.parse import quote, urlencode

from ...domain.actions import EXTEND_STEPS
from ...domain.loans import LoanRequest
from ...domain.reserve import ReserveRequest
from ...services.lifecycle import loans
from ...services.reads import overview
from ...services.booking import reserve
from ..context import PageContext, Redirect
from ..render import when
from ..timeline import system_timeline
from . import forms

FILTERS = {"pool": "str", "arch": "str", "lab": "str", "condition": "str", "free_from": "time", "free_until": "time"}
PER_PAGE = 100


def listing(ctx: PageContext):
    chosen = forms.filters(ctx.query, FILTERS)
    group = forms.text(ctx.query, "group")
    data = overview.systems_page(ctx.uow, ctx.actor, ctx.now, chosen, group, forms.whole(ctx.query, "page"), PER_PAGE)
    shown = {name: ctx.query.get(name, "") for name in (*FILTERS, "group")}
    return ctx.render("systems.html", filters=shown, group=group, groups=overview.GROUPS,
                      pager_query=urlencode({name: value for name, value in shown.items() if value}), **data)


def show(ctx: PageContext):
    data = overview.system_page(ctx.uow, ctx.actor, ctx.now, ctx.args["fqdn"])
    return ctx.render("system.html", durations=forms.DURATIONS, extend_steps=EXTEND_STEPS,
                      timeline=system_timeline(ctx, data["system"]["fqdn"]), **data)


def page_of(fqdn: str) -> str:
    return "/systems/" + quote(fqdn)


def take(ctx: PageContext) -> Redirect:
    asked = ReserveRequest(ctx.args["fqdn"], duration=forms.duration(ctx.form, "duration"),
                           purpose=ctx.form.get("purpose"))
    made, _ = reserve.reserve(ctx.uow, ctx.actor, ctx.now, ctx.settings.reservation_policy, asked)
    return Redirect(page_of(made["system"]), forms.holding(made))


def borrow(ctx: PageContext) -> Redirect:
    asked = LoanRequest(ctx.args["fqdn"], ctx.actor.name, limited=True, purpose=ctx.form.get("purpose"))
    loan = loans.grant(ctx.uow, ctx.actor, ctx.now, asked)
    return Redirect(page_of(loan["system"]), f"{loan['system']} is lent to you until {when(loan['end'])}.")


def return_loan(ctx: PageContext) -> Redirect:
    loans.give_back(ctx.uow, ctx.actor, ctx.now, ctx.args["fqdn"])
    return Redirect(page_of(ctx.args["fqdn"]), "The loan is returned.")
