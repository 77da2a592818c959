"""Health, readiness and identity."""
from ...domain.errors import NotReady
from ...services.reads import monitoring
from ...services.auth import signin
from ...services.people import users
from ...timeparse import format_duration
from .context import Context


def health(ctx: Context) -> dict:
    return {"status": "ok"}


def ready(ctx: Context) -> dict:
    """Readiness: unlike liveness it reads the database (two small queries: the schema's revision, the
    newest worker heartbeat)."""
    is_ready, checks = monitoring.readiness(ctx.uow, ctx.now, ctx.settings.worker_heartbeat_timeout)
    if not is_ready:
        reasons = "; ".join(f"{name}: {state}" for name, state in checks.items() if state != "ok")
        raise NotReady(f"not ready: {reasons}", checks=checks)
    # A lab whose agent is silent does not make the server unready (the rest of the site works): degraded.
    checks["labs"] = monitoring.lab_agents(ctx.uow, ctx.now, ctx.settings.agent_silence_limit)
    return {"status": "ready" if checks["labs"] == "ok" else "degraded", "checks": checks}


def me(ctx: Context) -> dict:
    policy = ctx.settings.reservation_policy
    site = {"default_reservation_duration": format_duration(policy.default_duration),
            "max_reservation_duration": format_duration(policy.max_duration),
            "allow_unlimited_reservations": policy.allow_unlimited,
            "default_loan_duration": format_duration(ctx.settings.default_loan_duration)}
    return users.whoami(ctx.uow, ctx.actor) | {"site": site}


def openapi(ctx: Context) -> dict:
    from ..openapi import build_spec  # the spec is built from the route table, which imports this module

    return build_spec(ctx.settings.base_url)


def calendar_url(ctx: Context, token: str | None) -> dict:
    return {"url": f"{ctx.settings.base_url}/calendar/{ctx.actor.name}/{token}.ics" if token else None}


def calendar_show(ctx: Context) -> dict:
    return calendar_url(ctx, signin.calendar_token_of(ctx.uow, ctx.actor))


def calendar_rotate(ctx: Context) -> dict:
    return calendar_url(ctx, signin.calendar_token(ctx.uow, ctx.actor, rotate=True))
