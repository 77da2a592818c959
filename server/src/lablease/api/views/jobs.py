"""/jobs, /recipes, /queue, usage and utilisation."""
from datetime import timedelta

from werkzeug.exceptions import UnsupportedMediaType
from werkzeug.wrappers import Response

from ...domain.paging import Page
from ...services.lifecycle import job_export, jobs
from ...services.records import usage, utilisation as utilisation_service
from ...services.queue import waiting
from ...services.catalog import systems as system_service
from ..inputs import read_json
from .context import Context, Reply

XML = ("application/xml", "text/xml")


def _job_body(ctx: Context) -> tuple[dict, list]:
    """The normalised job and its warnings."""
    from ...jobxml import job_warnings, normalise_job, parse_job_xml_with_warnings

    if ctx.mimetype in XML:
        return parse_job_xml_with_warnings(ctx.raw)
    if ctx.mimetype in ("application/json", ""):
        job = normalise_job(read_json(None, ctx.raw) if ctx.raw.strip() else {})
        return job, job_warnings(job)
    raise UnsupportedMediaType(f"send job XML (application/xml) or JSON (application/json), not {ctx.mimetype}")


def submit(ctx: Context) -> Reply:
    body, warnings = _job_body(ctx)
    job, created = jobs.submit(ctx.uow, ctx.actor, ctx.now, body, ctx.query.get("request_id"), warnings)
    return Reply(job, 201 if created else 200)


def listing(ctx: Context) -> Page:
    return jobs.listing(ctx.uow, ctx.actor, ctx.query.get("mine", True), ctx.query.get("status"),
                        request_id=ctx.query.get("request_id"), page=ctx.page)


def show(ctx: Context) -> dict:
    return jobs.show(ctx.uow, ctx.actor, ctx.now, ctx.args["id"])


def export(ctx: Context) -> Response:
    return Response(job_export.export(ctx.uow, ctx.actor, ctx.args["id"]), mimetype="application/xml")


def cancel(ctx: Context) -> dict:
    return jobs.cancel(ctx.uow, ctx.actor, ctx.now, ctx.args["id"])


def show_recipe(ctx: Context) -> dict:
    return jobs.show_recipe(ctx.uow, ctx.actor, ctx.now, ctx.args["id"])


def update_recipe(ctx: Context) -> dict:
    return jobs.update_recipe(ctx.uow, ctx.actor, ctx.now, ctx.args["id"], ctx.body)


def queue(ctx: Context) -> Page:
    return waiting.queue(ctx.uow, ctx.actor, ctx.now, ctx.page)


def _period(ctx: Context):
    until = ctx.query.get("until") or ctx.now
    return ctx.query.get("from") or until - timedelta(days=7), until


def usage_history(ctx: Context) -> dict:
    system = system_service.find(ctx.uow, ctx.args["fqdn"], ctx.actor)
    start, end = _period(ctx)
    return {"system": system.fqdn, "changes": usage.history(ctx.uow, system, start, end),
            "seconds": usage.time_in_states(ctx.uow, system, start, end)}


def utilisation(ctx: Context) -> dict:
    start, end = _period(ctx)
    return usage.utilisation(ctx.uow, start, end, ctx.query.get("pool"))


def utilisation_series(ctx: Context) -> dict:
    """Pre-aggregated hours (services/records/utilisation.py) added up per hour or day."""
    start, end = _period(ctx)
    return utilisation_service.report(ctx.uow, ctx.query.get("pool"), start, end, ctx.query.get("per") or "day")
