"""taskactions.*: a job's parts by taskspec (J:, RS:, R:, T:) — Beaker's results XML (`bkr job-results`,
mrack), their state (`job-watch`), cancelling (`job-cancel`, mrack's destroy) and their logs (`job-logs`).
Names and numbering: domain/beaker_runs.py; docs/beaker.md, "Jobs"."""
from __future__ import annotations

from ...services.lifecycle import beaker_jobs
from ..call import Call
from ..registry import xmlrpc


@xmlrpc("taskactions.to_xml", auth=False)  # bkr reads without logging in (beaker_public_jobs)
def to_xml(call: Call, taskid, clone=False, exclude_enclosing_job=True, include_logs=True):
    """The results XML (a string, as Beaker sends it); with clone, the job XML to submit again."""
    return beaker_jobs.to_xml(call.uow, call.actor, call.now, taskid, bool(clone),
                              not exclude_enclosing_job).decode("utf-8")


@xmlrpc("taskactions.task_info", auth=False)  # bkr reads without logging in (beaker_public_jobs)
def task_info(call: Call, taskid, flat=True):
    return beaker_jobs.task_info(call.uow, call.actor, call.now, taskid)


@xmlrpc("taskactions.stop", writes=True)
def stop(call: Call, taskid, stop_type, msg=None):
    return beaker_jobs.stop(call.uow, call.user, call.now, taskid, stop_type)


@xmlrpc("taskactions.files", auth=False)  # bkr reads without logging in (beaker_public_jobs)
def files(call: Call, taskid):
    """The part's result logs: lablease keeps none (its harness reports results, not files)."""
    return beaker_jobs.files(call.uow, call.actor, call.now, taskid)
