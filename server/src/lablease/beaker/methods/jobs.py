"""jobs.*: submitting and listing jobs (`bkr job-submit`, `job-list`), and a job's JUnit XML (`job-results
--format junit-xml`). The same use cases as /api/v1/jobs (services/lifecycle/beaker_jobs.py)."""
from __future__ import annotations

from werkzeug.wrappers import Response

from ...domain.errors import Invalid
from ...services.lifecycle import beaker_jobs
from ..call import Call
from ..registry import rest, xmlrpc


@xmlrpc("jobs.upload", writes=True)
def upload(call: Call, jobxml, ignore_missing_tasks=False):
    """Queue a job; 'J:id'. The XML goes through the same hardened parser as POST /api/v1/jobs."""
    if not isinstance(jobxml, (str, bytes)):
        raise Invalid("jobxml", "send the job XML as a string")
    return beaker_jobs.upload(call.uow, call.user, call.now, jobxml)


@xmlrpc("jobs.filter", auth=False)  # bkr reads without logging in (beaker_public_jobs)
def filter_jobs(call: Call, filters=None):
    """['J:id', ...] newest first: owner (or mine), group (or my_groups), whiteboard (a substring), minid,
    maxid, is_finished, limit; among the jobs the caller may see."""
    if filters is not None and not isinstance(filters, dict):
        raise Invalid("filters", "send the filters as a struct")
    return beaker_jobs.filter_ids(call.uow, call.actor, filters or {})


@rest("GET", "/jobs/<int:job_id>.junit.xml", auth=False)  # bkr reads without logging in (beaker_public_jobs)
def junit(call: Call, job_id: int):
    return Response(beaker_jobs.junit(call.uow, call.actor, call.now, job_id), mimetype="application/xml")
