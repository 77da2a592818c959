"""Why a recipe waits, in words: each category, its sentence and its action, in the queue and on the recipe."""
from datetime import timedelta

import pytest

from lablease.config import Settings
from lablease.services.lifecycle import health
from lablease.services.people import users
from lablease.store.uow import UnitOfWork
from lablease.worker.loop import run_step

from .conftest import START, Lab, at

H = timedelta(hours=1)


@pytest.fixture
def lab(db, tmp_path):
    lab = Lab(db, Settings(data_dir=str(tmp_path / "data")))
    with UnitOfWork(db) as uow:
        users.ensure_arusers(uow, START)
        uow.commit()
    lab.admin.post("/groups/arusers/members", {"user": "alice"})
    return lab


def on(fqdn: str) -> dict:
    return {"recipe_sets": [{"recipes": [{"host_requires": {"field": "hostname", "op": "=", "value": fqdn}}]}]}


def reasons(lab) -> dict[int, dict]:
    _, queue = lab.alice.get("/queue")
    return {entry["job"]: entry for entry in queue}


def test_busy_behind_and_no_match_each_say_what_to_do(lab):
    lab.system("a1.lab.test", condition="automated")
    lab.system("a2.lab.test", condition="automated")
    lab.system("z1.lab.test", condition="automated", arch="s390x")
    _, running = lab.alice.post("/jobs", on("a1.lab.test"))
    _, busy = lab.alice.post("/jobs", on("a1.lab.test"))
    lab.alice.post("/jobs", on("z1.lab.test"))  # keeps z1 busy
    _, never = lab.alice.post("/jobs", {"recipe_sets": [{"recipes": [
        {"host_requires": {"field": "arch", "op": "=", "value": "s390x"}}]}]})
    # a set that can never start is refused when submitted; one can still become impossible later
    assert lab.admin.patch("/systems/z1.lab.test", {"arch": "x86_64"})[0] == 200
    lab.clock.now = START + 2 * H
    queue = reasons(lab)
    assert running["id"] not in queue  # it runs
    assert queue[busy["id"]]["reason"] == {  # it names its one system: widening is no advice to it
        "category": "busy", "sentence": "a1.lab.test, the one system it asks for, is busy with no end set.",
        "action": "Wait for a1.lab.test: it runs on no other system."}
    assert queue[busy["id"]]["position"] == 1 and queue[busy["id"]]["waiting"] == 7200
    assert queue[busy["id"]]["wants"] == "hostname = a1.lab.test" and queue[busy["id"]]["owner"] == "alice"
    assert queue[never["id"]]["reason"]["category"] == "no-match"
    assert queue[never["id"]]["reason"]["sentence"] == "No system can ever run it (3 system(s): arch = s390x)."
    assert queue[never["id"]]["position"] == 2
    recipe = busy["recipe_sets"][0]["recipes"][0]["id"]
    _, shown = lab.alice.get(f"/recipes/{recipe}")
    assert shown["why"]["category"] == "busy" and shown["why"]["ahead"] == 0
    assert shown["why"]["busy"] == [{"system": "a1.lab.test", "until": None}] and shown["why"]["free"] == []


def test_an_advance_reservation_and_broken_candidates_are_named(lab):
    lab.system("a1.lab.test", condition="automated")
    lab.system("b1.lab.test", condition="automated")
    _, ar = lab.alice.post("/advance-reservations", {"start": at(START + 10 * H), "duration": "2h",
                                                     "hosts": ["a1.lab.test"]})
    _, bound = lab.alice.post("/jobs", {"recipe_sets": [{"ar": ar["id"], "recipes": [{"runtime_limit": 1800}]}]})
    lab.alice.post("/jobs", on("b1.lab.test"))  # keeps b1 busy
    _, broken = lab.alice.post("/jobs", on("b1.lab.test"))  # (refused were b1 broken already: it could never start)
    lab.admin.patch("/systems/b1.lab.test", {"condition": "broken"})
    queue = reasons(lab)
    assert queue[bound["id"]]["reason"] == {
        "category": "advance-reservation",
        "sentence": f"Waits for advance reservation {ar['id']}, which starts at {at(START + 10 * H)}.",
        "action": "Wait for the advance reservation to start, or resubmit the job without it."}
    assert queue[broken["id"]]["reason"]["category"] == "broken"
    assert queue[broken["id"]]["reason"]["action"] == "Ask an administrator to repair b1.lab.test: it runs on no " \
                                                      "other system."


def test_a_health_check_pinned_to_its_system_is_not_told_to_widen_its_requirements(lab):
    """A health check runs on the system it checks (forced): held by another recipe, it waits for that system."""
    lab.system("h1.lab.test", condition="automated")
    lab.system("h2.lab.test", condition="automated")
    assert lab.admin.post("/health-checks", {"name": "smoke", "system": "h1.lab.test", "job": {
        "recipe_sets": [{"recipes": [{"tasks": [{"name": "/health/smoke"}]}]}]}})[0] == 201
    _, running = lab.alice.post("/jobs", on("h1.lab.test"))
    assert lab.bob.post("/systems/h1.lab.test/health-check")[0] == 202
    run_step(lab.db, lab.settings, health.DUE, lab.clock())
    [check] = [entry for entry in reasons_of(lab) if entry["owner"] == "admin"]
    assert check["wants"] == "system h1.lab.test"  # not "system h1.lab.test, any system"
    assert check["reason"] == {"category": "busy",
                               "sentence": "h1.lab.test, the one system it asks for, is busy with no end set.",
                               "action": "Wait for h1.lab.test: it runs on no other system."}


def test_a_recipe_without_a_runtime_limit_before_a_booking_ahead_is_told_to_give_it_one(lab):
    """Free now, but an advance reservation holds it from 2030: a recipe with no runtime limit never starts there
    (docs/scheduler.md), and a runtime limit that ends before 2030 is what lets it start now."""
    lab.system("f1.lab.test", condition="automated", memory_mb=4096)
    ahead = at(START.replace(year=2030))
    assert lab.alice.post("/advance-reservations", {"start": ahead, "duration": "6h",
                                                    "hosts": ["f1.lab.test"]})[0] == 201
    _, unlimited = lab.bob.post("/jobs", {"recipe_sets": [{"recipes": [{"host_requires": {"and": [
        {"field": "arch", "op": "=", "value": "x86_64"}, {"field": "memory", "op": ">=", "value": 1024}]}}]}]})
    queue = reasons(lab)
    assert queue[unlimited["id"]]["reason"] == {
        "category": "busy",
        "sentence": f"1 candidate system(s) are free now but booked from {ahead}, and a recipe without a runtime "
                    "limit never starts on a system with a booking ahead.",
        "action": f"Give it a runtime_limit that ends before {ahead} (resubmit the job with one), or wait until "
                  "that booking is over."}
    assert queue[unlimited["id"]]["wants"] == "arch = x86_64 and memory >= 1024"  # in words, not JSON
    _, limited = lab.bob.post("/jobs", {"recipe_sets": [{"recipes": [{"runtime_limit": 3600, "host_requires": {
        "field": "arch", "op": "=", "value": "x86_64"}}]}]})
    assert limited["id"] not in reasons(lab)  # what the advice says: with a runtime limit it starts now
    assert lab.bob.get(f"/jobs/{limited['id']}")[1]["recipe_sets"][0]["recipes"][0]["system"] == "f1.lab.test"


def reasons_of(lab) -> list[dict]:
    return lab.admin.get("/queue")[1]
