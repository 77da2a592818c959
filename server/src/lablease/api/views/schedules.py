"""/schedules"""
from ...domain.paging import Page
from ...services.calendar import schedules
from ..inputs import duration_field, time_field
from .context import Context, Reply


def _window(body: dict) -> dict:
    out = dict(body)
    for name in ("start", "end"):
        if name in body:
            out[name] = time_field(body, name)
    if "duration" in body:
        out["duration"] = duration_field(body, "duration")
    return out


def subjects(ctx: Context) -> Page:
    return schedules.list_subjects(ctx.uow, ctx.page)


def subject(ctx: Context) -> dict:
    return schedules.get_subject(ctx.uow, ctx.args["subject"])


def put_subject(ctx: Context) -> Reply:
    result, created = schedules.put_subject(
        ctx.uow, ctx.actor, ctx.now, ctx.args["subject"], duration_field(ctx.body, "default_duration"))
    return Reply(result, 201 if created else 200)


def put_resource(ctx: Context) -> dict:
    return schedules.put_resource(
        ctx.uow, ctx.actor, ctx.now, ctx.args["subject"], ctx.args["resource_id"], ctx.body["capacity"])


def create(ctx: Context) -> dict:
    return schedules.reserve(ctx.uow, ctx.actor, ctx.now, ctx.args["subject"], _window(ctx.body))


def find(ctx: Context) -> Page:
    return schedules.find(ctx.uow, ctx.now, ctx.args["subject"], ctx.query, ctx.page)


def show(ctx: Context) -> dict:
    return schedules.get(ctx.uow, ctx.now, ctx.args["subject"], ctx.args["id"])


def update(ctx: Context) -> dict:
    return schedules.update(ctx.uow, ctx.actor, ctx.now, ctx.args["subject"], ctx.args["id"], _window(ctx.body))


def cancel(ctx: Context) -> None:
    schedules.cancel(ctx.uow, ctx.actor, ctx.now, ctx.args["subject"], ctx.args["id"])
