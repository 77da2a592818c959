"""Random workloads, random completion orders: no double use, no deadlock, feasible work all runs, work that
could never run is refused at once.

Through the whole API and database, so a few examples only: the planner's own properties (placement,
queue order, backfill, deadlock) run thousands of cases in tests/server/unit/test_planner_properties.py.
"""
import itertools
import shutil

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from sqlalchemy import select

from lablease.domain.errors import Conflict
from lablease.store.db import Database
from lablease.store.tables import Recipe

from .conftest import Lab
from .test_scheduler import Scheduler, job, recipe

ARCHES = ("x86_64", "aarch64")
_ids = itertools.count()

workloads = st.fixed_dictionaries({
    "systems": st.lists(st.sampled_from(ARCHES), min_size=2, max_size=5),
    "sets": st.lists(st.tuples(st.sampled_from(["Low", "Normal", "High"]),
                               st.lists(st.sampled_from(ARCHES + (None,)), min_size=1, max_size=3)),
                     min_size=1, max_size=5),
    "order": st.randoms(use_true_random=False),
})


def feasible(arches_wanted, systems):
    """Can the set ever run whole: distinct systems for every recipe? (tiny: brute force)"""
    for chosen in itertools.permutations(range(len(systems)), len(arches_wanted)):
        if all(want is None or systems[i] == want for want, i in zip(arches_wanted, chosen)):
            return True
    return False


def busy_systems_are_distinct(db):
    from lablease.store.uow import UnitOfWork

    with UnitOfWork(db, write=False) as uow:
        held = [r.system_id for r in uow.session.execute(select(Recipe).where(
            Recipe.status.in_(("assigned", "scheduled", "waiting", "installing", "running")))).unique().scalars()]
    assert len(held) == len(set(held)), "two recipes on one system"
    return held


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(workload=workloads)
def test_random_workloads(sqlite_template, tmp_path, workload):
    path = tmp_path / f"w{next(_ids)}.db"
    shutil.copy(sqlite_template, path)
    db = Database(f"sqlite:///{path}")
    try:
        lab = Lab(db)
        s = Scheduler(lab)
        for n, arch in enumerate(workload["systems"]):
            lab.system(f"s{n}.lab.test", condition="automated", arch=arch)
        submitted = []
        for priority, wanted in workload["sets"]:
            recipes = [recipe({"field": "arch", "op": "=", "value": a} if a else None) for a in wanted]
            if not feasible(wanted, workload["systems"]):  # refused at once, never queued to hold systems
                with pytest.raises(Conflict, match="can never start"):
                    s.submit("alice", job(recipes, priority=priority))
                continue
            body = s.submit("alice", job(recipes, priority=priority))
            submitted.append((wanted, body["recipe_sets"][0]))
            busy_systems_are_distinct(db)
        rng = workload["order"]
        for _ in range(200):
            running = _running(db)
            if not running:
                break
            lab.clock.advance(minutes=1)
            s.finish(rng.choice(running), rng.choice(["pass", "warn", "fail"]))
            busy_systems_are_distinct(db)
        for wanted, recipe_set in submitted:
            states = {s.recipe(r["id"])["status"] for r in recipe_set["recipes"]}
            assert states == {"completed"}, (wanted, states)
    finally:
        db.dispose()


def _running(db):
    from lablease.store.uow import UnitOfWork

    with UnitOfWork(db, write=False) as uow:
        return list(uow.session.execute(select(Recipe.id).where(Recipe.status == "running")).scalars())
