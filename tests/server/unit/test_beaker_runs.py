"""domain/beaker_runs.py: how a lablease recipe's run reads in Beaker's words, as a table."""
from __future__ import annotations

import pytest

from lablease.domain import beaker_runs as runs
from lablease.domain.errors import Invalid
from lablease.domain.recipes import STATES

TASKS = ({"name": "/distribution/check-install"}, {"name": "/kernel/fs"}, {"name": "/kernel/net"})


def run(status="running", result="none", kept=False, reported=(), guests=(), tasks=TASKS):
    return runs.RecipeRun(1, status, result, kept, tasks, tuple(reported), tuple(guests))


@pytest.mark.parametrize("status, kept, beaker", [
    ("new", False, "New"), ("queued", False, "Queued"), ("assigned", False, "Queued"),
    ("scheduled", False, "Scheduled"), ("waiting", False, "Waiting"), ("installing", False, "Installing"),
    ("running", False, "Running"), ("completed", False, "Completed"), ("cancelled", False, "Cancelled"),
    ("aborted", False, "Aborted"),
    ("completed", True, "Reserved"),  # reservesys holds the system: what mrack and tmt wait for
    ("aborted", True, "Reserved"),  # onabort keeps it too
])
def test_recipe_status(status, kept, beaker):
    assert runs.recipe_status(run(status, kept=kept)) == beaker


def test_every_lablease_state_has_a_beaker_name():
    assert {runs.recipe_status(run(state)) for state in STATES} <= set(runs.STATUS_SEVERITY)


@pytest.mark.parametrize("status, result, beaker", [
    ("running", "none", "New"), ("running", "pass", "Pass"), ("completed", "none", "None"),
    ("completed", "warn", "Warn"), ("completed", "fail", "Fail"),
    ("cancelled", "none", "Warn"), ("aborted", "pass", "Warn"), ("aborted", "fail", "Fail"),
])
def test_recipe_result(status, result, beaker):
    assert runs.recipe_result(run(status, result)) == beaker


def test_rollup_is_the_least_advanced_status_and_the_worst_result_guests_included():
    guest = runs.RecipeRun(2, "completed", "fail")
    host = run("completed", "pass", kept=True, guests=(guest,))
    assert runs.rollup([host]) == ("Reserved", "Fail")
    assert runs.rollup([host, run("running")]) == ("Running", "Fail")  # Beaker's severity: Running first
    assert runs.rollup([run("completed", "pass"), run("aborted")]) == ("Aborted", "Warn")


def test_tasks_follow_the_results_reported_and_the_recipe():
    reported = [{"name": "/distribution/check-install", "result": "pass"},
                {"name": "/kernel/fs/ext4", "result": "warn", "message": "slow"}]  # a result under a task's path
    tasks = runs.task_runs(run("running", reported=reported))
    assert [(t.id, t.status, t.result) for t in tasks] == [
        (10001, "Completed", "Pass"), (10002, "Completed", "Warn"), (10003, "Running", "New")]
    assert tasks[1].results == ({"path": "/kernel/fs/ext4", "result": "Warn", "message": "slow"},)
    ended = runs.task_runs(run("cancelled", reported=reported[:1]))
    assert [(t.status, t.result) for t in ended] == [("Completed", "Pass"), ("Cancelled", "Warn"),
                                                     ("Cancelled", "Warn")]
    queued = runs.task_runs(run("queued"))
    assert {(t.status, t.result) for t in queued} == {("Queued", "New")}
    unknown = runs.task_runs(run("running", reported=[{"name": "/elsewhere", "result": "fail"}]))
    assert unknown[-1].result == "Fail"  # a result naming no task goes to the last one


def test_task_ids_split_back_to_their_recipe():
    assert runs.split_task_id(runs.task_id(1234, 7)) == (1234, 7)


@pytest.mark.parametrize("text, allowed, expected", [
    ("J:12", runs.KINDS, ("J", 12)), ("RS:3", ("J", "RS"), ("RS", 3)), ("T:10001", runs.KINDS, ("T", 10001)),
])
def test_taskspecs(text, allowed, expected):
    assert runs.parse_taskspec(text, allowed) == expected


@pytest.mark.parametrize("text, allowed, reason", [
    ("12", runs.KINDS, "is not a taskspec"), ("X:1", runs.KINDS, "is not a taskspec"),
    ("J:one", runs.KINDS, "is not a taskspec"), ("R:4", ("J", "RS"), "cannot be used here; give J:id or RS:id"),
])
def test_bad_taskspecs_are_refused_saying_why(text, allowed, reason):
    with pytest.raises(Invalid, match=reason):
        runs.parse_taskspec(text, allowed)
