"""Health and identity."""
from ...services import signin, users
from ...timeparse import format_duration
from .context import Context


def health(ctx: Context) -> dict:
    return {"status": "ok"}


def me(ctx: Context) -> dict:
    policy = ctx.settings.reservation_policy
    site = {"default_reservation_duration": format_duration(policy.default_duration),
            "max_reservation_duration": format_duration(policy.max_duration),
            "allow_unlimited_reservations": policy.allow_unlimited,
            "default_loan_duration": format_duration(ctx.settings.default_loan_duration)}
    return users.whoami(ctx.uow.session, ctx.actor) | {"site": site}


def openapi(ctx: Context) -> dict:
    from ..openapi import build_spec  # the spec is built from the route table, which imports this module

    return build_spec(ctx.settings.base_url)


def calendar_url(ctx: Context, token: str | None) -> dict:
    return {"url": f"{ctx.settings.base_url}/calendar/{ctx.actor.name}/{token}.ics" if token else None}


def calendar_show(ctx: Context) -> dict:
    return calendar_url(ctx, signin.calendar_token_of(ctx.uow.session, ctx.actor))


def calendar_rotate(ctx: Context) -> dict:
    return calendar_url(ctx, signin.calendar_token(ctx.uow, ctx.actor, rotate=True))
