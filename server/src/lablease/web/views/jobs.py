"""/queue, /jobs and /jobs/<id>: what waits and why (services/waiting.py, as GET /api/v1/queue), jobs, cancel."""
from ...domain.paging import PageRequest
from ...services import jobs, waiting
from ..context import PageContext, Redirect
from . import forms

QUEUE_SHOWN = 50  # entries on the queue page (the API's /queue gives 100)
SHOWN = 20  # busy candidates named per recipe (on the queue page, on a job's page), then "and N more"
STATUSES = ("queued", "scheduled", "waiting", "installing", "running", "completed", "cancelled", "aborted")


def queue(ctx: PageContext):
    entries = waiting.queue(ctx.uow, ctx.actor, ctx.now, PageRequest(QUEUE_SHOWN), details=True).items
    oldest = max(entries, key=lambda e: e["waiting"], default=None)
    return ctx.render("queue.html", entries=entries, oldest=oldest, shown=SHOWN)


def listing(ctx: PageContext):
    mine = ctx.query.get("mine", "true") != "false"
    status = forms.text(ctx.query, "status")
    found = jobs.listing(ctx.uow, ctx.actor, mine=mine, status=status if status in STATUSES else None).items
    return ctx.render("jobs.html", jobs=found, mine=mine, chosen=status or "", statuses=STATUSES)


def show(ctx: PageContext):
    job = jobs.show(ctx.uow, ctx.actor, ctx.now, ctx.args["id"])
    recipes = {r["id"]: jobs.show_recipe(ctx.uow, ctx.actor, ctx.now, r["id"])
               for rs in job["recipe_sets"] for r in rs["recipes"]}
    unfinished = any(r["status"] not in ("completed", "cancelled", "aborted") for r in recipes.values())
    return ctx.render("job.html", job=job, recipes=recipes, unfinished=unfinished, shown=SHOWN)


def cancel(ctx: PageContext) -> Redirect:
    job = jobs.cancel(ctx.uow, ctx.actor, ctx.now, ctx.args["id"])
    return Redirect(f"/jobs/{job['id']}", f"Job {job['id']} is cancelled.")
