"""lab_controllers: bkr labcontroller-list (no login needed, as in Beaker). Beaker's lab controllers are
lablease's labs: each answers by its name (a lab served by an agent, configured in `labs:`, or named by a
system), not a host name (docs/beaker.md)."""
from __future__ import annotations

from ...services.provisioning import labs
from ..call import Call
from ..registry import xmlrpc


@xmlrpc("lab_controllers", auth=False)
def lab_controllers(call: Call):
    return labs.names(call.uow, call.settings.labs)
