"""/queue, /jobs and /jobs/<id>: what waits and why (services/queue/waiting.py, as GET /api/v1/queue), jobs, cancel."""
from ...domain.paging import PageRequest
from ...services.lifecycle import jobs
from ...services.queue import waiting
from ..context import PageContext, Redirect
from . import forms

QUEUE_SHOWN = 50  # entries on the queue page (the API's /queue gives 100)
PER_PAGE = 100  # systems judged per page of a recipe's expanded reasons
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
    """Why each recipe waits from its candidate list (fast over any number of systems); `?reasons=<recipe id>`
    adds that recipe's verdict on each system, PER_PAGE systems at a time from `from` (in name order)."""
    job = jobs.show(ctx.uow, ctx.actor, ctx.now, ctx.args["id"])
    summaries = waiting.Summaries(ctx.uow, ctx.now)
    recipes = {r["id"]: jobs.show_recipe(ctx.uow, ctx.actor, ctx.now, r["id"], summaries=summaries)
               for rs in job["recipe_sets"] for r in rs["recipes"]}
    expanded, start = forms.whole(ctx.query, "reasons", default=0), forms.whole(ctx.query, "from", default=0)
    verdicts = None
    if expanded in recipes and "why" in recipes[expanded]:
        verdicts = waiting.reasons_page(ctx.uow, expanded, ctx.now, start,
                                        PER_PAGE + 1)  # one more: is there a next page?
    unfinished = any(r["status"] not in ("completed", "cancelled", "aborted") for r in recipes.values())
    return ctx.render("job.html", job=job, recipes=recipes, unfinished=unfinished, shown=SHOWN, expanded=expanded,
                      verdicts=verdicts and verdicts[:PER_PAGE], more=bool(verdicts and len(verdicts) > PER_PAGE),
                      start=start, per_page=PER_PAGE)


def cancel(ctx: PageContext) -> Redirect:
    job = jobs.cancel(ctx.uow, ctx.actor, ctx.now, ctx.args["id"])
    return Redirect(f"/jobs/{job['id']}", f"Job {job['id']} is cancelled.")
