"""/reservations: mine, with Extend, Return, heartbeat status, a Take form and the calendar feed's address."""
from ...domain.actions import EXTEND_STEPS
from ...domain.signin import safe_next
from ...domain.paging import MAX_LIMIT, PageRequest
from ...domain.reserve import ReserveRequest
from ...services.lifecycle import lease, loans, reservations
from ...services.booking import reserve
from ...services.auth import signin
from ..context import PageContext, Redirect
from ..render import when
from . import forms


def mine(ctx: PageContext):
    held = reservations.list_reservations(ctx.uow, ctx.actor, ctx.now, user="me", active=True,
                                         page=PageRequest(MAX_LIMIT)).items  # a person holds far fewer
    token = signin.calendar_token_of(ctx.uow, ctx.actor)
    return ctx.render("reservations.html", reservations=held, loans=loans.lent_to(ctx.uow, ctx.actor, ctx.now),
                      durations=forms.DURATIONS, extend_steps=EXTEND_STEPS,
                      calendar_url=f"{ctx.base_url}/calendar/{ctx.actor.name}/{token}.ics" if token else None)


def take(ctx: PageContext) -> Redirect:
    asked = ReserveRequest(forms.text(ctx.form, "system") or "", duration=forms.duration(ctx.form, "duration"))
    made, _ = reserve.reserve(ctx.uow, ctx.actor, ctx.now, ctx.settings.reservation_policy, asked)
    return Redirect("/reservations", forms.holding(made))


def extend(ctx: PageContext) -> Redirect:
    done = lease.extend(ctx.uow, ctx.actor, ctx.now, ctx.settings.reservation_policy, ctx.args["id"],
                        extend_by=forms.duration(ctx.form, "by"))
    return Redirect(safe_next(ctx.form.get("back"), "/reservations"),
                    f"Reservation {done['id']} of {done['system']} now ends {when(done['end'])}.")


def give_back(ctx: PageContext) -> Redirect:
    done = lease.give_back(ctx.uow, ctx.actor, ctx.now, ctx.args["id"])
    return Redirect(safe_next(ctx.form.get("back"), "/reservations"), f"{done['system']} is returned.")
