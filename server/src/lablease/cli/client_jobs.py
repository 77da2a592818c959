"""Handlers of `lablease job ...`, `jobs`, `recipe ...`, `queue` and `distros`: the scheduler's side.

`job submit --wait` and `job watch` poll `GET /jobs/{id}` every `--interval`
seconds; everything else is one or two requests.
"""
from __future__ import annotations

import json

import time
from datetime import datetime, timezone
from pathlib import Path

from lxml import etree

from . import output
from ..domain import times
from .client_commands import Outcome, creating
from .client_http import Api, ClientError, Terminated, stopped
from .client_status import ExitStatus
from .client_views import DISTRO, JOB, QUEUE, RECIPE, job_recipes

FINISHED = ("completed", "cancelled", "aborted")
XML_TYPE, JSON_TYPE = "application/xml", "application/json"
BOM = b"\xef\xbb\xbf"

sleep = time.sleep  # tests may replace it
monotonic = time.monotonic


# --- submitting --------------------------------------------------------------------------------

def read_job(source: str, stdin) -> tuple[bytes, str]:
    """The job's bytes and their content type: by the file's extension, else by its first character."""
    if source == "-":
        buffer = getattr(stdin, "buffer", None)
        data = buffer.read() if buffer is not None else stdin.read()
        if isinstance(data, str):
            data = data.encode("utf-8")
        return data, sniff(data)
    path = Path(source)
    try:
        data = path.read_bytes()
    except OSError as error:
        raise ClientError(f"cannot read {source}: {error.strerror or error}", ExitStatus.USAGE) from error
    suffix = path.suffix.lower()
    if suffix == ".xml":
        return data, XML_TYPE
    if suffix == ".json":
        return data, JSON_TYPE
    return data, sniff(data)


def sniff(data: bytes) -> str:
    """Job XML starts with `<` (after white space or a byte order mark); anything else is sent as JSON."""
    return XML_TYPE if data.removeprefix(BOM).lstrip().startswith(b"<") else JSON_TYPE


def bind_to_ar(data: bytes, content_type: str, ar_id: int) -> bytes:
    """Every recipe set of the job bound to advance reservation ar_id (`--ar`)."""
    if content_type == XML_TYPE:
        from ..domain.errors import DomainError
        from ..jobxml.safexml import parse_untrusted

        try:
            root = parse_untrusted(data)
        except DomainError as error:
            raise ClientError(f"job: {error.detail}", ExitStatus.USAGE) from None
        for recipe_set in root.iter("recipeSet"):
            recipe_set.set("ar", str(ar_id))
        return etree.tostring(root, xml_declaration=True, encoding="utf-8")
    try:
        job = json.loads(data)
        for recipe_set in job["recipe_sets"]:
            recipe_set["ar"] = ar_id
    except (ValueError, KeyError, TypeError) as error:
        raise ClientError(f"job: not a job in JSON form ({error})", ExitStatus.USAGE) from None
    return json.dumps(job).encode()


def job_submit(api: Api, args) -> Outcome:
    data, content_type = read_job(args.file, args.environment.stdin)
    if args.ar is not None:
        data = bind_to_ar(data, content_type, args.ar)
    job = creating(args, lambda request_id: api.post_raw("/jobs", data, content_type, {"request_id": request_id},
                                                        idempotent=True))
    if args.wait or args.timeout is not None:  # --timeout implies --wait
        job = wait_until_running(api, job, args.timeout, args.interval)
    return Outcome(job, JOB)


def wait_until_running(api: Api, job: dict, timeout: float | None, interval: float) -> dict:
    """The job once every recipe is running; ClientError (with the job to show) when one ends or time runs out."""
    deadline = None if timeout is None else monotonic() + timeout
    try:
        while True:
            recipes = job_recipes(job)
            ended = [r for r in recipes if r.get("status") in FINISHED]
            if ended:
                first = ended[0]
                raise ClientError(f"job {job['id']}: recipe {first['id']} {first['status']} (result "
                                  f"{first.get('result')}) before every recipe was running", ExitStatus.ENDED,
                                  outcome=Outcome(job, JOB))
            waiting = [r for r in recipes if r.get("status") != "running"]
            if not waiting:
                return job
            if deadline is not None and monotonic() >= deadline:
                raise ClientError(timeout_message(api, job, waiting, timeout), ExitStatus.TIMED_OUT,
                                  outcome=Outcome(job, JOB))
            pause = interval if deadline is None else max(0.0, min(interval, deadline - monotonic()))
            sleep(pause)
            job = api.get(f"/jobs/{job['id']}")
    except (KeyboardInterrupt, Terminated) as stop:
        word, status = stopped(stop)
        raise ClientError(f"{word}; job {job['id']} stays submitted ({job.get('status')}; "
                          f"`lablease job cancel {job['id']}` cancels it)", status) from None
    except ClientError as error:  # the job exists: its id is never lost (--json prints it)
        error.outcome = error.outcome or Outcome(job, JOB)
        raise


def timeout_message(api: Api, job: dict, waiting: list[dict], timeout: float) -> str:
    first = waiting[0]
    message = (f"job {job['id']}: not every recipe is running after {seconds_text(timeout)}; "
               f"recipe {first['id']} is {first.get('status')}")
    try:
        why = (api.get(f"/recipes/{first['id']}").get("why") or {}).get("message")
    except ClientError:
        why = None
    return f"{message}: {why}" if why else message


def seconds_text(value: float) -> str:
    return output.format_human(value)


# --- one job ---------------------------------------------------------------------------------

def job_status(api: Api, args) -> Outcome:
    return Outcome(api.get(f"/jobs/{args.id}"), JOB)


def job_export(api: Api, args) -> Outcome:
    """The job as Beaker job XML (GET /jobs/{id}.xml), which resubmits to the same job."""
    return Outcome(message=api.get_text(f"/jobs/{args.id}.xml").rstrip("\n"))


def job_cancel(api: Api, args) -> Outcome:
    before = {r["id"] for r in job_recipes(api.get(f"/jobs/{args.id}")) if r.get("status") not in FINISHED}
    job = api.post(f"/jobs/{args.id}/cancel")
    cancelled = [r for r in job_recipes(job) if r["id"] in before and r.get("status") == "cancelled"]
    if not cancelled:
        return Outcome(job, JOB, f"job {args.id} is already {job.get('status')}; nothing to cancel")
    return Outcome(job, JOB, f"cancelled job {args.id}: {len(cancelled)} of {len(job_recipes(job))} "
                             f"recipe(s) cancelled")


def job_watch(api: Api, args) -> Outcome:
    """Prints a line per recipe at the start and one per change, until the job is finished."""
    stream = args.environment.stdout if args.format is None else None
    seen: dict[int, tuple] = {}
    job = api.get(f"/jobs/{args.id}")
    while True:
        for recipe in job_recipes(job):
            state = (recipe.get("status"), recipe.get("result"), recipe.get("system"))
            before = seen.get(recipe["id"])
            if state != before:
                seen[recipe["id"]] = state
                if stream is not None:
                    print(change_line(recipe, before), file=stream, flush=True)
        if job.get("status") in FINISHED:
            break
        sleep(args.interval)
        job = api.get(f"/jobs/{args.id}")
    return Outcome(job, JOB, f"{now_text()}  job {job['id']} {job.get('status')}: {job.get('result')}")


def change_line(recipe: dict, before: tuple | None) -> str:
    status = recipe.get("status")
    moved = status if before is None or before[0] == status else f"{before[0]} -> {status}"
    line = f"{now_text()}  recipe {recipe['id']}  {moved}"
    if recipe.get("system"):
        line += f"  on {recipe['system']}"
    if status in FINISHED or (recipe.get("result") not in (None, "none")):
        line += f"  result {recipe.get('result')}"
    return line


def now_text() -> str:
    return times.format_when(datetime.now(timezone.utc))


def jobs(api: Api, args) -> Outcome:
    params = {"mine": "false" if args.all else None, "status": args.status}
    return Outcome(api.get_all("/jobs", params), JOB)


# --- recipes, the queue, distro trees ------------------------------------------------------------

def recipe_show(api: Api, args) -> Outcome:
    return Outcome(api.get(f"/recipes/{args.id}"), RECIPE)


def recipe_finish(api: Api, args) -> Outcome:
    change = {"status": "aborted"} if args.abort else {"status": "completed", "result": args.result}
    recipe = api.patch(f"/recipes/{args.id}", change)
    said = "aborted" if args.abort else f"completed: {recipe.get('result')}"
    return Outcome(recipe, RECIPE, f"recipe {args.id} {said}")


def queue(api: Api, args) -> Outcome:
    return Outcome(api.get_all("/queue"), QUEUE)


def distros(api: Api, args) -> Outcome:
    params = {"name": args.name, "family": args.family, "arch": args.arch, "variant": args.variant}
    return Outcome(api.get_all("/distro-trees", params), DISTRO)
