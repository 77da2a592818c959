"""What `bkr workflow-simple` asks before it writes a job: distros.get_osmajor, distros.get_arch and
tasks.filter. lablease has no task library: every task named exists (docs/beaker.md, "No task library")."""
from __future__ import annotations

from ...domain import beaker_runs
from ...domain.errors import Invalid
from ...services.lifecycle import beaker_jobs
from ..call import Call
from ..registry import xmlrpc


@xmlrpc("distros.get_osmajor")
def get_osmajor(call: Call, distro):
    return beaker_jobs.osmajor_of(call.uow, distro)


@xmlrpc("distros.get_family")
def get_family(call: Call, distro):
    return beaker_jobs.osmajor_of(call.uow, distro)


@xmlrpc("distros.get_arch")
def get_arch(call: Call, filters):
    if not isinstance(filters, dict):
        raise Invalid("filter", "send a struct with distro or osmajor (and variant, tags)")
    return beaker_jobs.arches_of(call.uow, filters)


@xmlrpc("tasks.filter")
def filter_tasks(call: Call, filters):
    if not isinstance(filters, dict):
        raise Invalid("filter", "send a struct (names, osmajor, types, packages...)")
    return beaker_runs.tasks_filter(filters)
