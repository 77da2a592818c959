"""/advance-reservations: qrstat's list, one AR (window, systems, ACL, state and why, accounting), and
create (with validate-only), modify and delete through the API's use cases (services/calendar/advance.py)."""
from urllib.parse import quote

from ...domain.errors import Invalid
from ...domain.paging import MAX_LIMIT, PageRequest
from ...services.calendar import advance, advance_reports
from ..context import PageContext, Redirect
from . import forms

STATE_NAMES = {"w": "waiting", "r": "running", "x": "exited", "d": "deleted", "E": "error"}


def _names(values, name: str) -> list[str]:
    """A list field typed as names separated by commas or spaces."""
    return [part for part in (forms.text(values, name) or "").replace(",", " ").split() if part]


def listing(ctx: PageContext):
    everybody = ctx.query.get("user") == "*"
    found = advance.listing(ctx.uow, ctx.actor, "*" if everybody else None, PageRequest(MAX_LIMIT)).items
    return ctx.render("advance_list.html", ars=found, everybody=everybody, states=STATE_NAMES,
                      form={k: ctx.query.get(k, "") for k in ("name", "account", "start", "end", "duration", "hosts",
                                                              "pools", "count", "acl")})


def show(ctx: PageContext):
    ar = advance.get(ctx.uow, ctx.actor, ctx.args["ident"], explain=True)
    used = advance_reports.accounting(ctx.uow, ctx.actor, ctx.now, ctx.args["ident"])
    return ctx.render("advance.html", ar=ar, used=used, states=STATE_NAMES, final=ar["state"] in "xd")


def _request(values) -> dict:
    data = {"name": forms.text(values, "name"), "account": forms.text(values, "account"),
            "hosts": _names(values, "hosts"), "pools": _names(values, "pools"), "acl": _names(values, "acl") or None}
    for key in ("start", "end"):
        if forms.text(values, key):
            data[key] = forms.utc(forms.text(values, key))
    if forms.text(values, "duration"):
        data["duration"] = forms.text(values, "duration")
    count = forms.text(values, "count")
    if count:
        if not count.isdigit() or len(count) > 6:
            raise Invalid("count", "must be a whole number")
        data["count"] = int(count)
    return {k: v for k, v in data.items() if v not in (None, [])}


def create(ctx: PageContext) -> Redirect:
    data = _request(ctx.form)
    if ctx.form.get("validate_only"):
        asked = advance.parse_request(data | {"validate_only": True}, ctx.actor.name, ctx.now)
        answer, _ = advance.create(ctx.uow, ctx.actor, ctx.now, asked)
        return Redirect(ctx.form.get("back") or "/advance-reservations",
                        f"It could be granted now, on {', '.join(answer['systems'])}; nothing was made.")
    made, _ = advance.create(ctx.uow, ctx.actor, ctx.now, advance.parse_request(data, ctx.actor.name, ctx.now))
    return Redirect(f"/advance-reservations/{made['id']}", f"Advance reservation {made['id']} is granted.")


def modify(ctx: PageContext) -> Redirect:
    change = {}
    if "name" in ctx.form:
        change["name"] = forms.text(ctx.form, "name")
    if forms.text(ctx.form, "acl"):
        change["acl"] = _names(ctx.form, "acl")
    if forms.text(ctx.form, "end"):
        change["end"] = forms.utc(forms.text(ctx.form, "end"))
    done = advance.modify(ctx.uow, ctx.actor, ctx.now, ctx.args["ident"], advance.parse_change(change))
    return Redirect(f"/advance-reservations/{done['id']}", f"Advance reservation {done['id']} is changed.")


def delete(ctx: PageContext) -> Redirect:
    advance.delete(ctx.uow, ctx.actor, ctx.now, ctx.args["ident"], force=bool(ctx.form.get("force")))
    return Redirect("/advance-reservations/" + quote(str(ctx.args["ident"])), "The advance reservation is deleted.")
