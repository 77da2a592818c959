"""/reservations"""
from ...services.records import activity
from ...services.lifecycle import lease, reservations
from ...services.booking import reserve
from ...services.queue import wait_requests
from ..inputs import duration_field, time_field
from ...domain.paging import Page
from .context import Context, Reply
from ...domain.errors import Invalid
from ...domain.reserve import ReserveRequest
from ...domain.waitline import check_fields


def create(ctx: Context) -> Reply:
    body = ctx.body
    check_fields(body, bool(body.get("wait")))
    if body.get("wait"):
        return _wait(ctx, body)
    asked = ReserveRequest(
        body["system"], start=time_field(body, "start"), end=time_field(body, "end"),
        duration=duration_field(body, "duration", allow_unlimited=True),
        return_loan=body.get("return_loan", False), heartbeat=duration_field(body, "heartbeat"),
        request_id=body.get("request_id"), advance_reservation=body.get("advance_reservation"),
        purpose=body.get("purpose"), force=bool(ctx.query.get("force")),
        healthy_within=duration_field(body, "healthy_within"))
    reservation, created = reserve.reserve(ctx.uow, ctx.actor, ctx.now, ctx.settings.reservation_policy, asked)
    return Reply(reservation, 201 if created else 200)


def _wait(ctx: Context, body: dict) -> Reply:
    """Reserve, waiting in the queue when nothing it may get is free (docs/scheduler.md, "People in the queue")."""
    asked = wait_requests.parse_request(
        body, duration=duration_field(body, "duration", allow_unlimited=True),
        heartbeat=duration_field(body, "heartbeat"), take_by=duration_field(body, "take_by"), healthy_within=duration_field(body, "healthy_within"),
        force=bool(ctx.query.get("force")))
    reservation, created = wait_requests.enqueue(ctx.uow, ctx.actor, ctx.now, ctx.settings.reservation_policy, asked)
    answer = reservations.as_dict(ctx.uow, reservation, ctx.now)
    if not created:
        return Reply(answer, 200)
    return Reply(answer, 202 if answer["state"] == "waiting" else 201)


def listing(ctx: Context) -> Page:
    q = ctx.query
    return reservations.list_reservations(ctx.uow, ctx.actor, ctx.now, q.get("user"), q.get("system"), q.get("active"),
                                          ctx.page)


def show(ctx: Context) -> dict:
    return reservations.get(ctx.uow, ctx.actor, ctx.now, ctx.args["id"])


def update(ctx: Context) -> dict:
    body, result = ctx.body, None
    if "end" in body or "extend_by" in body:
        result = lease.extend(
            ctx.uow, ctx.actor, ctx.now, ctx.settings.reservation_policy, ctx.args["id"],
            end=time_field(body, "end"), extend_by=duration_field(body, "extend_by"))
    if "heartbeat" in body:
        result = lease.set_heartbeat(ctx.uow, ctx.actor, ctx.now, ctx.args["id"],
                                     duration_field(body, "heartbeat"))
    if result is None:
        raise Invalid("end", "give end, extend_by or heartbeat")
    return result


def give_back(ctx: Context) -> None:
    lease.give_back(ctx.uow, ctx.actor, ctx.now, ctx.args["id"])


def heartbeat(ctx: Context) -> dict:
    return lease.heartbeat(ctx.uow, ctx.actor, ctx.now, ctx.args["id"])


def history(ctx: Context) -> Page:
    reservations.get(ctx.uow, ctx.actor, ctx.now, ctx.args["id"])  # 404 unless visible
    return activity.entries(ctx.uow, "reservation", ctx.args["id"], ctx.page)
