"""A job's document: written back as job XML (GET /jobs/{id}.xml, `lablease job export`)."""
from __future__ import annotations

from ...domain import recipes as rules
from ...domain.permissions import Actor
from ...jobxml import render_job_xml
from ...store.tables import Group, Job
from .jobs import visible_job


def export(uow, actor: Actor, job_id: int) -> bytes:
    """The job as job XML: its document as submitted, which resubmits to an identical job."""
    job = visible_job(uow, actor, job_id)
    return render_job_xml(job.document if job.document is not None else document_of_old(uow, job))


def document_of_old(uow, job: Job) -> dict:
    """A job stored before jobs kept their document: rebuilt from its recipes (their host filters
    carry the distro's arches, which the scheduler added: the same systems match)."""
    group = uow.session.get(Group, job.group_id) if job.group_id is not None else None
    return {"whiteboard": job.whiteboard, "group": group.name if group else None, "recipe_sets": [
        {"priority": rules.PRIORITIES[rs.priority], "ar": rs.ar_id, "recipes": [r.spec for r in rs.recipes]}
        for rs in job.recipe_sets]}

