"""The scheduler as histories of events with a frozen clock, on SQLite and PostgreSQL."""
from datetime import timedelta

import pytest

from lablease.services.lifecycle import jobs
from lablease.services.handlers import unit_of_work
from lablease.worker.loop import run_due

from .conftest import START, Lab, at

H = timedelta(hours=1)


def recipe(host=None, **extra):
    spec = {"whiteboard": "", "host_requires": host, "force": None, "distro_requires": None,
            "autopick": {"random": False, "pools": []}, "reservesys": None, "runtime_limit": None,
            "ks_meta": "", "kernel_options": "", "tasks": []}
    spec.update(extra)
    return spec


def job(*sets, priority="Normal"):
    return {"whiteboard": "", "group": None,
            "recipe_sets": [{"priority": priority, "ar": None, "recipes": list(s)} for s in sets]}


class Scheduler:
    def __init__(self, lab):
        self.lab = lab

    def submit(self, user, body):
        from lablease.domain.permissions import Actor
        from lablease.services.people.users import actor_for, find_user

        with unit_of_work(self.lab.db, self.lab.settings) as uow:
            actor = actor_for(uow, find_user(uow, user))
            result, _ = jobs.submit(uow, actor, self.lab.clock(), body)
            uow.commit()
        assert isinstance(actor, Actor)
        return result

    def recipes(self, job_body):
        return [r for rs in job_body["recipe_sets"] for r in rs["recipes"]]

    def recipe(self, recipe_id, caller=None):
        status, body = (caller or self.lab.admin).get(f"/recipes/{recipe_id}")
        assert status == 200, body
        return body

    def finish(self, recipe_id, result="pass"):
        status, body = self.lab.admin.patch(f"/recipes/{recipe_id}", {"status": "completed", "result": result})
        assert status == 200, body
        return body


@pytest.fixture
def sched(db):
    lab = Lab(db)
    return lab, Scheduler(lab)


def automated(lab, *names, **fields):
    for name in names:
        lab.system(name, condition="automated", **fields)


def test_a_recipe_runs_at_once_on_a_free_automated_system(sched):
    lab, s = sched
    lab.system("manual.lab.test")
    automated(lab, "auto.lab.test")
    submitted = s.submit("alice", job([recipe()]))
    [r] = s.recipes(submitted)
    assert r["status"] == "running" and r["system"] == "auto.lab.test"
    assert submitted["status"] == "running"
    _, system = lab.admin.get("/systems/auto.lab.test")
    assert system["usage"] == "running"
    assert system["reservation"]["user"] == "alice"


def test_abba_two_multi_host_sets_never_hold_half_of_each_other(sched):
    lab, s = sched
    automated(lab, "a.lab.test", "b.lab.test")
    first = s.submit("alice", job([recipe(), recipe()]))
    second = s.submit("bob", job([recipe(), recipe()]))
    assert [r["status"] for r in s.recipes(first)] == ["running", "running"]
    assert [r["status"] for r in s.recipes(second)] == ["queued", "queued"]
    assert all(r["system"] is None for r in s.recipes(second))  # holds nothing
    for r in s.recipes(first)[:1]:
        s.finish(r["id"])
    # one system free: bob's set, the head of the queue, holds it, but does not start half
    states = [s.recipe(r["id"])["status"] for r in s.recipes(second)]
    assert sorted(states) == ["assigned", "queued"]
    s.finish(s.recipes(first)[1]["id"])
    assert [s.recipe(r["id"])["status"] for r in s.recipes(second)] == ["running", "running"]


def test_a_large_set_is_not_starved_by_a_stream_of_small_ones(sched):
    lab, s = sched
    automated(lab, "a.lab.test", "b.lab.test", "c.lab.test", "d.lab.test")
    running = [s.recipes(s.submit("alice", job([recipe()])))[0]["id"] for _ in range(4)]
    big = s.submit("bob", job([recipe()] * 4))
    small_waiting = []
    for step in range(8):
        lab.clock.advance(minutes=5)
        small_waiting.append(s.recipes(s.submit("alice", job([recipe()])))[0]["id"])
        if running:
            s.finish(running.pop(0))
        if all(s.recipe(r["id"])["status"] == "running" for r in s.recipes(big)):
            break
    assert all(s.recipe(r["id"])["status"] == "running" for r in s.recipes(big))
    assert step <= 4  # as soon as the four systems running before it are done
    assert all(s.recipe(rid)["status"] == "queued" for rid in small_waiting)


def test_a_later_set_of_a_higher_priority_becomes_the_head_within_its_own_job(sched):
    """A job's sets are placed in one go (the head of the queue found once): a later set that comes first in
    scheduling order is still the head, and holds what is free; the earlier head gives back what it held."""
    lab, s = sched
    automated(lab, "a.lab.test", "b.lab.test", "c.lab.test")
    lab.user("carol")
    running = s.recipes(s.submit("alice", job([recipe(), recipe()])))  # on two of the three
    earlier = s.recipes(s.submit("carol", job([recipe(), recipe(), recipe()])))  # the head: holds the third
    assert sorted(r["status"] for r in earlier) == ["assigned", "queued", "queued"]
    lab.clock.advance(minutes=1)
    body = job([recipe(), recipe(), recipe()], [recipe(), recipe(), recipe()], [recipe(), recipe(), recipe()])
    body["recipe_sets"][1]["priority"] = "High"
    normal, high, last = ([r["id"] for r in rs["recipes"]] for rs in s.submit("bob", body)["recipe_sets"])
    assert sorted(s.recipe(rid)["status"] for rid in high) == ["assigned", "queued", "queued"]
    assert [s.recipe(rid)["status"] for rid in normal + last] == ["queued"] * 6
    assert [s.recipe(r["id"])["status"] for r in earlier] == ["queued"] * 3  # gave back: not the head now
    for r in running:
        s.finish(r["id"])
    assert [s.recipe(rid)["status"] for rid in high] == ["running"] * 3
    assert [s.recipe(r["id"])["status"] for r in earlier] == ["queued"] * 3


def test_a_jobs_alike_sets_start_on_different_systems_and_the_rest_wait(sched):
    """The sets of one job are placed in one go: what one set took is not free for the next."""
    lab, s = sched
    automated(lab, "a.lab.test", "b.lab.test")
    submitted = s.submit("alice", job([recipe()], [recipe()], [recipe()]))
    recipes = s.recipes(submitted)
    assert [r["status"] for r in recipes] == ["running", "running", "queued"]
    assert {r["system"] for r in recipes[:2]} == {"a.lab.test", "b.lab.test"}


def test_priority_then_age(sched):
    lab, s = sched
    automated(lab, "a.lab.test")
    busy = s.recipes(s.submit("alice", job([recipe()])))[0]
    low = s.recipes(s.submit("alice", job([recipe()], priority="Low")))[0]
    lab.clock.advance(minutes=1)
    high = s.recipes(s.submit("bob", job([recipe()], priority="High")))[0]
    lab.clock.advance(minutes=1)
    high2 = s.recipes(s.submit("bob", job([recipe()], priority="High")))[0]
    s.finish(busy["id"])
    assert s.recipe(high["id"])["status"] == "running"
    assert s.recipe(high2["id"])["status"] == "queued" and s.recipe(low["id"])["status"] == "queued"
    s.finish(high["id"])
    assert s.recipe(high2["id"])["status"] == "running"


def test_autopick_prefers_pools_in_order(sched):
    lab, s = sched
    automated(lab, "any.lab.test", "slow.lab.test", "fast.lab.test")
    lab.admin.post("/pools", {"name": "fast"})
    lab.admin.post("/pools", {"name": "slow"})
    lab.admin.post("/pools/fast/systems", {"fqdn": "fast.lab.test"})
    lab.admin.post("/pools/slow/systems", {"fqdn": "slow.lab.test"})
    picks = [s.recipes(s.submit("alice", job([recipe(autopick={"random": False, "pools": ["slow", "fast"]})])))[0]
             for _ in range(3)]
    assert [p["system"] for p in picks] == ["slow.lab.test", "fast.lab.test", "any.lab.test"]


def test_host_requirements_and_why_a_recipe_waits(sched):
    lab, s = sched
    automated(lab, "x.lab.test", arch="x86_64")
    automated(lab, "arm.lab.test", arch="aarch64")
    lab.system("manual.lab.test", arch="aarch64")
    wants_arm = {"field": "arch", "op": "=", "value": "aarch64"}
    first = s.recipes(s.submit("alice", job([recipe(wants_arm)])))[0]
    assert first["system"] == "arm.lab.test"
    waiting = s.recipes(s.submit("bob", job([recipe(wants_arm)])))[0]
    why = s.recipe(waiting["id"])["why"]
    assert why["ruled_out"] == {"arch = aarch64": 1, "the system is manual, not automated": 1}
    assert why["busy"] == [{"system": "arm.lab.test", "until": None}]
    assert "1 candidate(s) busy: arm.lab.test until further notice" in why["message"]
    _, queue = lab.admin.get("/queue")
    assert [q["recipe"] for q in queue] == [waiting["id"]]


def test_backfill_before_an_upcoming_reservation(sched):
    lab, s = sched
    automated(lab, "a.lab.test")
    status, _ = lab.admin.post("/reservations", {"system": "a.lab.test", "start": at(START + 2 * H), "duration": "1h"})
    assert status == 201
    unlimited = s.recipes(s.submit("alice", job([recipe()])))[0]
    assert unlimited["status"] == "queued"
    short = s.recipes(s.submit("bob", job([recipe(runtime_limit=3600)])))[0]
    assert short["status"] == "running" and short["system"] == "a.lab.test"
    too_long = s.recipes(s.submit("bob", job([recipe(runtime_limit=3 * 3600)])))[0]
    assert too_long["status"] == "queued"


def test_watchdog_aborts_a_recipe_past_its_runtime_limit(sched):
    lab, s = sched
    automated(lab, "a.lab.test")
    r = s.recipes(s.submit("alice", job([recipe(runtime_limit=3600)])))[0]
    assert s.recipe(r["id"])["watchdog"] == at(START + H)
    run_due(lab.db, START + H, lab.settings)
    assert s.recipe(r["id"])["status"] == "aborted"
    _, system = lab.admin.get("/systems/a.lab.test")
    assert system["reservation"] is None and system["usage"] == "idle"


@pytest.mark.parametrize("flag, finish_with, keeps", [
    ("onpass", {"status": "completed", "result": "pass"}, True),
    ("onwarn", {"status": "completed", "result": "warn"}, True),
    ("onfail", {"status": "completed", "result": "fail"}, True),
    ("onabort", {"status": "aborted"}, True),
    ("onpass", {"status": "completed", "result": "fail"}, False),
    ("onabort", {"status": "cancelled"}, False),
])
def test_reservesys_keeps_the_system_for_its_owner(sched, flag, finish_with, keeps):
    lab, s = sched
    automated(lab, "a.lab.test")
    flags = {name: name == flag for name in ("onabort", "onfail", "onwarn", "onpass")}
    r = s.recipes(s.submit("alice", job([recipe(reservesys={**flags, "duration": 7200})])))[0]
    waiting = s.recipes(s.submit("bob", job([recipe()])))[0]
    lab.clock.advance(minutes=10)
    status, _ = lab.admin.patch(f"/recipes/{r['id']}", finish_with)
    assert status == 200
    _, system = lab.alice.get("/systems/a.lab.test")
    if keeps:
        assert system["reservation"]["user"] == "alice"
        assert system["reservation"]["end"] == at(lab.clock() + 2 * H)
        assert s.recipe(waiting["id"])["status"] == "queued"
        _, mine = lab.alice.get("/reservations", active="true")
        assert lab.alice.patch(f"/reservations/{mine[0]['id']}", {"extend_by": "1h"})[0] == 200
    else:
        assert s.recipe(waiting["id"])["status"] == "running"


def test_cancelling_a_job_frees_its_systems_for_the_queue(sched):
    lab, s = sched
    automated(lab, "a.lab.test")
    first = s.submit("alice", job([recipe()]))
    waiting = s.recipes(s.submit("bob", job([recipe()])))[0]
    status, cancelled = lab.alice.post(f"/jobs/{first['id']}/cancel")
    assert status == 200 and cancelled["status"] == "cancelled"
    assert s.recipe(waiting["id"])["status"] == "running"


def test_usage_history_and_utilisation(sched):
    lab, s = sched
    automated(lab, "a.lab.test")
    r = s.recipes(s.submit("alice", job([recipe()])))[0]
    lab.clock.advance(hours=3)
    s.finish(r["id"])
    lab.clock.advance(hours=1)
    _, usage = lab.admin.get("/systems/a.lab.test/usage", **{"from": at(START), "until": at(START + 4 * H)})
    assert [(c["field"], c["new"]) for c in usage["changes"]] == [
        ("usage", "scheduled"), ("usage", "running"), ("usage", "idle")]
    assert usage["seconds"]["running"] == 3 * 3600 and usage["seconds"]["idle"] == 3600
    _, report = lab.admin.get("/reports/utilisation", **{"from": at(START), "until": at(START + 4 * H)})
    assert report["systems"][0]["busy"] == 0.75


def test_usage_counts_only_while_the_system_existed(sched):
    lab, s = sched
    lab.clock.advance(hours=2)
    created = lab.clock()
    automated(lab, "a.lab.test")
    r = s.recipes(s.submit("alice", job([recipe()])))[0]
    lab.clock.advance(hours=1)
    s.finish(r["id"])
    lab.clock.advance(hours=1)
    lab.admin.delete("/systems/a.lab.test")
    lab.clock.advance(hours=1)
    period = {"from": at(START), "until": at(lab.clock())}  # 5h, of which the system existed for 2h
    _, usage = lab.admin.get("/systems/a.lab.test/usage", **period)
    assert usage["seconds"]["running"] == 3600 and usage["seconds"]["idle"] == 3600, usage
    assert sum(usage["seconds"].values()) == 2 * 3600
    _, report = lab.admin.get("/reports/utilisation", **period)
    assert [(e["fqdn"], e["busy"]) for e in report["systems"]] == [("a.lab.test", 0.5)]
    _, later = lab.admin.get("/reports/utilisation", **{"from": at(lab.clock()), "until": at(lab.clock() + H)})
    assert later["systems"] == []  # removed before that period
    _, before = lab.admin.get("/systems/a.lab.test/usage", **{"from": at(START), "until": at(created)})
    assert sum(before["seconds"].values()) == 0


def test_usage_periods_and_pools_are_checked(sched):
    lab, _ = sched
    automated(lab, "a.lab.test")
    reversed_period = {"from": at(START + H), "until": at(START)}
    for path in ("/systems/a.lab.test/usage", "/reports/utilisation"):
        status, problem = lab.admin.get(path, **reversed_period)
        assert status == 422 and problem["field"] == "from" and "before until" in problem["detail"], problem
    status, problem = lab.admin.get("/reports/utilisation", pool="nosuch")
    assert status == 422 and problem["detail"] == "pool: no pool named nosuch", problem
