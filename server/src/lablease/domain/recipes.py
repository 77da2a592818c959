"""Recipe and system state machines, result roll-ups, and the reservesys rule."""
from __future__ import annotations

from .errors import Conflict

PRIORITIES = ("Low", "Medium", "Normal", "High", "Urgent")
STATES = ("new", "queued", "assigned", "scheduled", "waiting", "installing", "running",
          "completed", "cancelled", "aborted")
FINISHED = frozenset({"completed", "cancelled", "aborted"})
RESULTS = ("none", "pass", "warn", "fail")

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
