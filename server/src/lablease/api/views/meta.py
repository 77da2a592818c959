"""Health and identity."""
from ...services import users
from .context import Context


def health(ctx: Context) -> dict:
    return {"status": "ok"}


def me(ctx: Context) -> dict:
    return users.whoami(ctx.uow.session, ctx.actor)


def openapi(ctx: Context) -> dict:
    from ..openapi import build_spec  # the spec is built from the route table, which imports this module

    return build_spec(ctx.settings.base_url)
