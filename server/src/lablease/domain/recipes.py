"""Recipe and system state machines, result roll-ups, and the reservesys rule."""
from __future__ import annotations

from .errors import Conflict

PRIORITIES = ("Low", "Medium", "Normal", "High", "Urgent")
STATES = ("new", "queued", "assigned", "scheduled", "waiting", "installing", "running",
          "completed", "cancelled", "aborted")
FINISHED = frozenset({"completed", "cancelled", "aborted"})
RESULTS = ("none", "pass", "warn", "fail")
# The states in which a recipe holds its system through its reservation (kind `recipe`): that reservation
# stays open until the recipe ends (services/booking/endings.py; the database refuses otherwise, migration 0024).
HOLDING = ("assigned", "scheduled", "waiting", "installing", "running")

# Which state may follow which; any unfinished state may also end cancelled or aborted.
_NEXT = {
    "new": {"queued"},
    "queued": {"assigned", "scheduled"},
    "assigned": {"scheduled", "queued"},  # a holding set may have to give its systems back
    "scheduled": {"waiting", "running"},  # without a distro there is nothing to install
    "waiting": {"installing", "running"},
    "installing": {"running"},
    "running": {"completed"},
}


def priority_value(name: str) -> int:
    return PRIORITIES.index(name)


def check_transition(current: str, new: str) -> None:
    if current in FINISHED:
        raise Conflict(f"the recipe is already {current}")
    if new in ("cancelled", "aborted"):
        return
    if new not in _NEXT.get(current, ()):
        raise Conflict(f"a recipe cannot go from {current} to {new}")


def worst_result(results) -> str:
    results = list(results)
    return max(results, key=RESULTS.index) if results else "none"


def rollup_status(states) -> str:
    """A recipe set's or job's status: the least advanced of its parts, or how they ended."""
    states = list(states)
    unfinished = [s for s in states if s not in FINISHED]
    if unfinished:
        return min(unfinished, key=STATES.index)
    for ending in ("aborted", "cancelled"):
        if ending in states:
            return ending
    return "completed"


def keeps_system(reservesys: dict | None, status: str, result: str) -> bool:
    """reservesys: does the finished recipe keep its system for its owner?

    A cancelled recipe never does; the four flags choose for the others.
    """
    if not reservesys or status == "cancelled":
        return False
    if status == "aborted":
        return bool(reservesys.get("onabort", True))
    flag = {"pass": "onpass", "warn": "onwarn", "fail": "onfail", "none": "onpass"}[result]
    return bool(reservesys.get(flag, True))


def refuse_return(reservation_id: int, recipe_id: int, job_id: int, status: str, fqdn: str,
                  why: str = "it ends with the recipe") -> Conflict:
    """A person may not hand back the reservation a recipe runs on: the recipe would go on using the system
    while the scheduler gives it to other work. Ending the recipe frees it (docs/scheduler.md)."""
    return Conflict(
        f"reservation {reservation_id} is held by recipe {recipe_id} of job {job_id}, which is {status} on "
        f"{fqdn}; {why}: cancel the job (lablease job cancel {job_id}) or finish the recipe "
        f"(PATCH /api/v1/recipes/{recipe_id} with status completed or aborted)",
        recipe=recipe_id, job=job_id)


def refuse_shortening(reservation_id: int, recipe_id: int, job_id: int, status: str, fqdn: str,
                      old_end, new_end) -> None:
    """An earlier end of the reservation a recipe runs on is a return put off (the recipe would be ended
    when it came): refused as a return is. A later end (more time for the recipe) is fine."""
    if new_end is None or (old_end is not None and new_end >= old_end):
        return
    raise refuse_return(reservation_id, recipe_id, job_id, status, fqdn,
                        "an earlier end would end the recipe, so its end only moves later; to end it sooner")


def never_starts(position: int, recipes: int, usable: list[str]) -> Conflict:
    """A recipe set that could not start even were every system free: refused when submitted, never queued
    (it would wait for ever, and as the head of the queue hold systems others could use)."""
    named = ", ".join(usable[:10]) + (f" and {len(usable) - 10} more" if len(usable) > 10 else "")
    found = f"{len(usable)} match ({named})" if usable else "none matches"
    return Conflict(
        f"recipe set {position} can never start: its {recipes} recipe(s) need a distinct system each, and of "
        f"the Automated systems you may be given (not Manual, broken or removed) {found}; change its host "
        "requirements, or ask an administrator for more systems", recipe_set=position, usable=len(usable))
