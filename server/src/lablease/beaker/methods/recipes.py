"""recipes.*: a recipe's watchdog — lablease's end of the recipe: a running recipe's runtime limit, a
Reserved recipe's reservation end (`bkr watchdog-show`, `watchdog-extend`; docs/beaker.md, "Watchdogs")."""
from __future__ import annotations

from ...domain.errors import Invalid
from ...services.lifecycle import beaker_jobs
from ..call import Call
from ..registry import rest, xmlrpc


@xmlrpc("recipes.tasks.watchdog", auth=False)  # bkr reads without logging in (beaker_public_jobs)
def task_watchdog(call: Call, task_id):
    """Seconds left on the watchdog of the task's recipe, False when it has none (bkr prints N/A)."""
    return beaker_jobs.watchdog(call.uow, call.actor, call.now, task_id)


@xmlrpc("recipes.watchdog", auth=False)  # bkr reads without logging in (beaker_public_jobs)
def recipe_watchdog(call: Call, recipe_id):
    return beaker_jobs.watchdog(call.uow, call.actor, call.now, f"R:{recipe_id}")


@xmlrpc("recipes.extend", writes=True)
def extend(call: Call, recipe_id, kill_time):
    return beaker_jobs.extend_watchdog(call.uow, call.user, call.now, f"R:{recipe_id}", kill_time)


def _kill_time(call: Call):
    if not isinstance(call.body, dict) or "kill_time" not in call.body:
        raise Invalid("kill_time", "send {\"kill_time\": seconds}")
    return call.body["kill_time"]


def _extended(call: Call, taskspec: str) -> dict:
    seconds = beaker_jobs.extend_watchdog(call.uow, call.user, call.now, taskspec, _kill_time(call))
    return {"seconds": seconds or 0}


@rest("POST", "/recipes/<int:recipe_id>/watchdog", fields={"kill_time": (int, float)})
def extend_recipe(call: Call, recipe_id: int):
    return _extended(call, f"R:{recipe_id}")


@rest("POST", "/recipes/by-taskspec/<taskspec>/watchdog", fields={"kill_time": (int, float)})
def extend_by_taskspec(call: Call, taskspec: str):
    return _extended(call, taskspec)


@rest("POST", "/recipes/by-fqdn/<fqdn>/watchdog", fields={"kill_time": (int, float)})
def extend_by_fqdn(call: Call, fqdn: str):
    return _extended(call, beaker_jobs.running_on(call.uow, call.user, fqdn))
