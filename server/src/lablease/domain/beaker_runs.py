"""How a lablease job looks to Beaker's clients: its parts' ids, status and result in Beaker's words.

Beaker's clients (`bkr job-results`, `job-watch`, mrack, tmt) read a job's run
through Beaker's names (docs/beaker.md, "Jobs"). Everything here is pure: the
service reads the job once and hands in plain values (`RecipeRun`); these
functions decide what Beaker would say.

- A recipe's status is its lablease state, except that a finished recipe
  whose `<reservesys>` still holds its system is `Reserved` (what mrack and
  tmt wait for); it becomes `Completed` (or `Aborted`) once that reservation
  ends. `assigned` (holding part of its set's systems) is still `Queued`.
- Results: nothing reported yet is `New`; a recipe that completed with no
  result is `None`; a cancelled or aborted recipe is at least `Warn` (Beaker
  records a Warn for each task it stops). lablease has no `Panic`.
- A recipe set's and a job's status is the least advanced of their recipes'
  (guests included) by Beaker's severity order, their result the worst.
- lablease keeps no task rows: a recipe's tasks are those its job asked for,
  numbered `recipe id * TASK_SPAN + position` (T:ids), and each reported
  result (`PATCH /recipes/{id}` `tasks`) belongs to the task it names — the
  first task whose name is the result's name or a path prefix of it, else
  the recipe's last task.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from .errors import Invalid
from .recipes import FINISHED

# Beaker's status names with their severity: a roll-up takes the least severe (the least advanced) part.
STATUS_SEVERITY = {"Running": 5, "Installing": 6, "Waiting": 7, "New": 10, "Processed": 20, "Queued": 30,
                   "Scheduled": 40, "Reserved": 45, "Aborted": 50, "Cancelled": 60, "Completed": 70}
FINISHED_STATUSES = frozenset({"Completed", "Cancelled", "Aborted"})
RESULT_SEVERITY = {"New": 10, "None": 15, "Skip": 16, "Pass": 20, "Warn": 30, "Fail": 40, "Panic": 50}
FAILED_RESULTS = frozenset({"Warn", "Fail", "Panic"})
TASK_SPAN = 10_000  # a job document holds fewer elements than this (jobxml MAX_ELEMENTS), so fewer tasks
KINDS = ("J", "RS", "R", "T")

_STATUS = {"new": "New", "queued": "Queued", "assigned": "Queued", "scheduled": "Scheduled",
           "waiting": "Waiting", "installing": "Installing", "running": "Running", "completed": "Completed",
           "cancelled": "Cancelled", "aborted": "Aborted"}
_RESULT = {"pass": "Pass", "warn": "Warn", "fail": "Fail"}


@dataclass(frozen=True)
class RecipeRun:
    """What the service read of one recipe (a guest recipe too)."""
    id: int
    status: str  # lablease's state
    result: str  # lablease's result
    kept: bool = False  # its reservesys reservation holds the system now
    tasks: tuple = ()  # the tasks its job asked for: {"name", "role", ...}
    reported: tuple = ()  # the results reported for it: {"name", "result", "message"?}
    guests: tuple = ()  # RecipeRun of its guest recipes
    started_at: datetime | None = None
    finished_at: datetime | None = None


@dataclass(frozen=True)
class TaskRun:
    id: int
    position: int  # from 1, among the recipe's tasks
    name: str
    status: str
    result: str
    results: tuple = field(default=())  # ({"path", "result", "message"}, ...)


def recipe_status(run: RecipeRun) -> str:
    if run.kept and run.status in ("completed", "aborted"):
        return "Reserved"
    return _STATUS[run.status]


def recipe_result(run: RecipeRun) -> str:
    result = _RESULT.get(run.result)
    if run.status in ("cancelled", "aborted"):
        return worst_result([result or "New", "Warn"])
    if result is None:
        return "None" if run.status == "completed" else "New"
    return result


def worst_result(results) -> str:
    return max(results, key=RESULT_SEVERITY.__getitem__, default="New")


def least_status(statuses) -> str:
    return min(statuses, key=STATUS_SEVERITY.__getitem__, default="New")


def is_finished(status: str) -> bool:
    return status in FINISHED_STATUSES


def is_failed(result: str) -> bool:
    return result in FAILED_RESULTS


def every_run(runs) -> list[RecipeRun]:
    """Recipes and their guests, as Beaker counts them in a roll-up."""
    return [r for run in runs for r in (run, *run.guests)]


def rollup(runs) -> tuple[str, str]:
    """A recipe set's or a job's (status, result) from its recipes (RecipeRun), guests included."""
    runs = every_run(runs)
    return least_status(recipe_status(r) for r in runs), worst_result(recipe_result(r) for r in runs)


def task_id(recipe_id: int, position: int) -> int:
    return recipe_id * TASK_SPAN + position


def split_task_id(value: int) -> tuple[int, int]:
    """T:id -> (recipe id, position from 1); position 0 names no task."""
    return divmod(value, TASK_SPAN)


def parse_taskspec(text, allowed=KINDS) -> tuple[str, int]:
    """'J:12' -> ('J', 12); anything else is refused naming what Beaker's clients send."""
    kind, colon, number = str(text).partition(":")
    if not colon or not number.isdigit() or kind not in KINDS:
        raise Invalid("taskspec", f"{text!r} is not a taskspec: give J:id, RS:id, R:id or T:id")
    if kind not in allowed:
        raise Invalid("taskspec", f"{text}: a {kind}: taskspec cannot be used here; give "
                                  + " or ".join(f"{k}:id" for k in allowed))
    return kind, int(number)


def _owner_task(tasks, name: str) -> int:
    """The index of the task a result named `name` belongs to: its name, or a path prefix of it."""
    for index, task in enumerate(tasks):
        task_name = task.get("name") or ""
        if name == task_name or (task_name and name.startswith(task_name.rstrip("/") + "/")):
            return index
    return len(tasks) - 1


def task_runs(run: RecipeRun) -> list[TaskRun]:
    """The recipe's tasks with Beaker's status and result.

    A task with a result reported is Completed; while the recipe runs, the first task without one is
    Running and the others wait; once the recipe ends, the ones left take its ending (Cancelled or
    Aborted with a Warn, as Beaker stops them; Completed when it completed)."""
    tasks = list(run.tasks)
    results: list[list[dict]] = [[] for _ in tasks]
    for reported in run.reported if tasks else ():
        results[_owner_task(tasks, reported.get("name") or "")].append(reported)
    status = _STATUS[run.status]
    out, running_given = [], False
    for index, (task, mine) in enumerate(zip(tasks, results)):
        result = worst_result(_RESULT.get(r.get("result"), "None") for r in mine) if mine else "New"
        if mine:
            task_status = "Completed"
        elif run.status in FINISHED:
            task_status = status
            result = "Warn" if run.status != "completed" else "None"
        elif run.status == "running":
            task_status, running_given = ("Waiting", True) if running_given else ("Running", True)
        else:
            task_status = status
        out.append(TaskRun(task_id(run.id, index + 1), index + 1, task.get("name") or "", task_status, result,
                           tuple({"path": r.get("name") or "", "result": _RESULT.get(r.get("result"), "None"),
                                  "message": r.get("message") or ""} for r in mine)))
    return out


def tasks_filter(filters: dict) -> list[dict]:
    """tasks.filter without a task library (docs/beaker.md, "No task library"): every task named exists
    for every distro and arch — the harness fetches tasks by name or URL, lablease never needs their
    metadata — and no task has a type or a package, so a filter by those alone finds none."""
    names = filters.get("names") or []
    if isinstance(names, str):
        names = [names]
    if filters.get("types") or filters.get("packages"):
        return []
    return [{"name": str(name), "arches": []} for name in dict.fromkeys(names)]
