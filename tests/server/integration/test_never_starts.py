"""Work that could never be given a system is refused at once, never queued to hold systems or wait for
ever: a recipe set needing more Automated systems than match it (job submit), a wait whose matching
systems are all Automated or broken (reserve --wait by pool or requires). docs/scheduler.md."""
from .conftest import Lab  # noqa: F401

AARCH64 = {"field": "arch", "op": "=", "value": "aarch64"}


def _aarch64_lab(lab):
    for n in range(3):
        lab.system(f"a{n}.lab.test", condition="automated", arch="aarch64")
    lab.system("m0.lab.test", condition="manual", arch="aarch64")  # matches, but the scheduler never gives it
    lab.system("b0.lab.test", condition="automated", arch="aarch64")
    assert lab.admin.patch("/systems/b0.lab.test", {"condition": "broken"})[0] == 200


def _set(*recipes, priority="Normal"):
    return {"recipe_sets": [{"priority": priority, "recipes": list(recipes)}]}


def test_a_set_needing_more_automated_systems_than_match_is_refused_at_submit(lab):
    _aarch64_lab(lab)
    four = {"host_requires": AARCH64}
    status, problem = lab.alice.post("/jobs", _set(four, four, four, four, priority="High"))
    assert status == 409, problem
    assert "recipe set 1 can never start" in problem["detail"]
    assert "3 match (a0.lab.test, a1.lab.test, a2.lab.test)" in problem["detail"]
    assert lab.alice.get("/jobs")[1] == []  # nothing half-written
    # and nothing held: a one-system aarch64 job runs at once
    status, small = lab.bob.post("/jobs", _set({"host_requires": AARCH64}))
    assert status == 201 and small["recipe_sets"][0]["recipes"][0]["status"] == "running"
    # three fit: accepted
    status, three = lab.alice.post("/jobs", _set(four, four, four))
    assert status == 201, three


def test_a_set_that_becomes_impossible_gives_back_what_it_held(lab):
    for n in range(2):
        lab.system(f"a{n}.lab.test", condition="automated", arch="aarch64")
    status, busy = lab.bob.post("/jobs", _set({"host_requires": AARCH64}))
    busy_recipe = busy["recipe_sets"][0]["recipes"][0]
    assert busy_recipe["status"] == "running"
    status, pair = lab.alice.post("/jobs", _set({"host_requires": AARCH64}, {"host_requires": AARCH64}))
    assert status == 201
    held = [r for r in pair["recipe_sets"][0]["recipes"] if r["status"] == "assigned"]
    assert len(held) == 1  # the head of the queue holds the free one while it waits
    # the busy system is removed (its recipe aborted): the pair can never start, so it holds nothing
    assert lab.admin.delete(f"/systems/{busy_recipe['system']}", force="true")[0] == 204
    statuses = [lab.admin.get(f"/recipes/{r['id']}")[1]["status"] for r in pair["recipe_sets"][0]["recipes"]]
    assert statuses == ["queued", "queued"]
    status, system = lab.admin.get(f"/systems/{held[0]['system']}")
    assert system["reservation"] is None
    status, small = lab.bob.post("/jobs", _set({"host_requires": AARCH64}))
    assert small["recipe_sets"][0]["recipes"][0]["status"] == "running"


def test_a_wait_for_a_pool_of_automated_systems_is_refused_at_once_saying_why(lab):
    _aarch64_lab(lab)
    assert lab.admin.patch("/systems/m0.lab.test", {"condition": "broken"})[0] == 200
    assert lab.admin.post("/pools", {"name": "autopool"})[0] == 201
    for name in ("a0", "a1", "m0"):
        assert lab.admin.post("/pools/autopool/systems", {"fqdn": f"{name}.lab.test"})[0] == 200
    for body in ({"pools": ["autopool"]}, {"requires": AARCH64}):
        status, problem = lab.bob.post("/reservations", {"wait": True, "duration": "1h", **body})
        assert status == 409, problem
        assert "would wait for ever" in problem["detail"] and "Automated" in problem["detail"], problem
        assert "broken" in problem["detail"]
    assert lab.bob.get("/reservations")[1] == []
    # the same as naming one of them
    status, problem = lab.bob.post("/reservations", {"system": "a0.lab.test", "duration": "1h"})
    assert status == 403 and "the scheduler gives it to jobs" in problem["detail"], problem
    # lent to bob, an Automated system is his to wait for
    assert lab.admin.post("/systems/a1.lab.test/loan", {"recipient": "bob"})[0] == 201
    status, granted = lab.bob.post("/reservations", {"wait": True, "duration": "1h", "pools": ["autopool"]})
    assert status == 201 and granted["system"] == "a1.lab.test", granted
