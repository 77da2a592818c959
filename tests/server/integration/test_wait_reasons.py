"""Why a recipe waits, in words: each category, its sentence and its action, in the queue and on the recipe."""
from datetime import timedelta

import pytest

from lablease.config import Settings
from lablease.services import users
from lablease.store.uow import UnitOfWork

from .conftest import START, Lab, at

H = timedelta(hours=1)


@pytest.fixture
def lab(db, tmp_path):
    lab = Lab(db, Settings(data_dir=str(tmp_path / "data")))
    with UnitOfWork(db) as uow:
        users.ensure_arusers(uow.session, START)
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
    assert queue[busy["id"]]["reason"] == {
        "category": "busy", "sentence": "All 1 candidate system(s) are busy; none has an end set.",
        "action": "Wait, or widen the host requirements so that more systems qualify."}
    assert queue[busy["id"]]["position"] == 1 and queue[busy["id"]]["waiting"] == 7200
    assert "hostname" in queue[busy["id"]]["wants"] and queue[busy["id"]]["owner"] == "alice"
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
    assert queue[broken["id"]]["reason"]["action"].startswith("Ask an administrator to repair one")
