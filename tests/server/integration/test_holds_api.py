"""Holds that end early or stay in bounds: giving back part of an advance reservation, a multi-host set's
finished recipe giving its system back, a required purpose, a maximum total hold per user."""
from datetime import timedelta

import pytest

from lablease.config import Settings
from lablease.services.people import users
from lablease.store.uow import UnitOfWork

from .conftest import START, Lab, at

H = timedelta(hours=1)
# Rules over plain reads and writes: SQLite proves them; the floor's concurrency runs on both (test_pool_floor.py).
pytestmark = pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)


def test_an_ar_owner_gives_back_single_systems_before_its_end(db, tmp_path):
    lab = Lab(db, Settings(data_dir=str(tmp_path / "data")))
    with UnitOfWork(db) as uow:
        users.ensure_arusers(uow, START)
        uow.commit()
    lab.admin.post("/groups/arusers/members", {"user": "alice"})
    for name in ("a1", "a2", "a3"):
        lab.system(f"{name}.lab.test", condition="automated")
    status, ar = lab.alice.post("/advance-reservations", {"duration": "4h", "count": 3})
    assert status == 201 and ar["state"] == "r", ar
    _, inside = lab.alice.post("/reservations", {"system": "a3.lab.test", "advance_reservation": ar["id"]})
    lab.clock.advance(hours=1)
    # not another user; not a system it does not hold; not one its own work uses; not all of them
    assert lab.bob.patch(f"/advance-reservations/{ar['id']}", {"release": ["a1.lab.test"]})[0] in (403, 404)
    status, problem = lab.alice.patch(f"/advance-reservations/{ar['id']}", {"release": ["nope.lab.test"]})
    assert status == 422 and problem["field"] == "release"
    status, problem = lab.alice.patch(f"/advance-reservations/{ar['id']}", {"release": ["a3.lab.test"]})
    assert status == 409 and "in use" in problem["detail"]
    status, problem = lab.alice.patch(f"/advance-reservations/{ar['id']}",
                                      {"release": ["a1.lab.test", "a2.lab.test", "a3.lab.test"]})
    assert status == 422 and "delete" in problem["detail"]
    status, changed = lab.alice.patch(f"/advance-reservations/{ar['id']}", {"release": ["a1.lab.test"]})
    assert status == 200, changed
    assert changed["systems"] == ["a2.lab.test", "a3.lab.test"]
    assert changed["released"] == [{"system": "a1.lab.test", "at": at(START + H)}]
    # free at once: anybody may book it now, inside what was the AR's window
    assert lab.admin.post("/reservations", {"system": "a1.lab.test", "duration": "1h"})[0] == 201
    _, system = lab.alice.get("/systems/a1.lab.test")
    assert system["advance_reservations"] == []
    # its accounting counts it until it was given back, the others until now
    lab.clock.advance(hours=1)
    _, used = lab.alice.get(f"/advance-reservations/{ar['id']}/accounting")
    reserved = {s["system"]: s["reserved_seconds"] for s in used["systems"]}
    assert reserved == {"a1.lab.test": 3600, "a2.lab.test": 7200, "a3.lab.test": 7200}
    assert used["reserved_seconds"] == 3600 + 2 * 7200
    assert lab.alice.get(f"/reservations/{inside['id']}")[1]["state"] == "active"  # its work goes on


def test_a_finished_recipe_of_a_multi_host_set_gives_its_system_back_unless_reservesys(lab):
    for name in ("a", "b", "c"):
        lab.system(f"{name}.lab.test", condition="automated")
    fqdn = {"field": "hostname", "op": "=", "value": ""}
    recipe = lambda name, **more: {"host_requires": {**fqdn, "value": f"{name}.lab.test"}, **more}  # noqa: E731
    _, job = lab.alice.post("/jobs", {"recipe_sets": [{"recipes": [
        recipe("a"), recipe("b", reservesys={"duration": 3600}), recipe("c")]}]})
    first, kept, running = job["recipe_sets"][0]["recipes"]
    assert [r["status"] for r in (first, kept, running)] == ["running"] * 3, job
    _, waiting = lab.bob.post("/jobs", {"recipe_sets": [{"recipes": [recipe("a")]}]})
    assert waiting["recipe_sets"][0]["recipes"][0]["status"] == "queued"
    lab.clock.advance(minutes=10)
    assert lab.alice.patch(f"/recipes/{first['id']}", {"status": "completed", "result": "pass"})[0] == 200
    assert lab.alice.patch(f"/recipes/{kept['id']}", {"status": "completed", "result": "pass"})[0] == 200
    assert lab.alice.get(f"/recipes/{running['id']}")[1]["status"] == "running"  # the set goes on
    _, bobs = lab.bob.get(f"/jobs/{waiting['id']}")
    assert bobs["recipe_sets"][0]["recipes"][0]["system"] == "a.lab.test"  # a went back to the queue at once
    _, b = lab.alice.get("/systems/b.lab.test")
    assert b["reservation"]["user"] == "alice" and b["reservation"]["end"] == at(START + 70 * timedelta(minutes=1))


def test_a_site_requires_a_purpose_shown_with_the_holder(db, tmp_path):
    lab = Lab(db, Settings(data_dir=str(tmp_path / "data"), require_purpose=True))
    lab.system("m.lab.test")
    lab.system("n.lab.test")
    status, problem = lab.alice.post("/reservations", {"system": "m.lab.test", "duration": "1h"})
    assert status == 422 and problem["field"] == "purpose"
    assert lab.alice.post("/reservations", {"system": "m.lab.test", "purpose": "  "})[0] == 422
    status, made = lab.alice.post("/reservations", {"system": "m.lab.test", "duration": "1h",
                                                    "purpose": " kernel bisect "})
    assert status == 201 and made["purpose"] == "kernel bisect"
    status, problem = lab.admin.post("/systems/n.lab.test/loan", {"recipient": "bob"})
    assert status == 422 and problem["field"] == "purpose"
    status, loan = lab.admin.post("/systems/n.lab.test/loan", {"recipient": "bob", "purpose": "driver work"})
    assert status == 201 and loan["purpose"] == "driver work"
    _, system = lab.bob.get("/systems/m.lab.test")
    assert system["reservation"]["user"] == "alice" and system["reservation"]["purpose"] == "kernel bisect"
    _, listed = lab.bob.get("/systems/n.lab.test")
    assert listed["loan"] == {"recipient": "bob", "end": None, "purpose": "driver work"}
    assert lab.alice.get(f"/reservations/{made['id']}")[1]["purpose"] == "kernel bisect"


def test_a_maximum_total_hold_per_user(db, tmp_path):
    lab = Lab(db, Settings(data_dir=str(tmp_path / "data"), max_hold_per_user="8h",
                           default_reservation_duration="4h"))
    for name in ("m1", "m2", "m3"):
        lab.system(f"{name}.lab.test")
    _, first = lab.alice.post("/reservations", {"system": "m1.lab.test", "duration": "5h"})
    status, problem = lab.alice.post("/reservations", {"system": "m2.lab.test", "duration": "4h"})
    assert status == 409 and (problem["limit"], problem["current_total"]) == (8 * 3600, 5 * 3600)
    assert "8h" in problem["detail"] and "5h" in problem["detail"]
    assert lab.alice.post("/reservations", {"system": "m2.lab.test", "duration": "unlimited"})[0] == 422  # never
    assert lab.bob.post("/reservations", {"system": "m2.lab.test", "duration": "4h"})[0] == 201  # each user's own
    # time passing frees room: what counts is what is left
    lab.clock.advance(hours=2)
    _, second = lab.alice.post("/reservations", {"system": "m3.lab.test", "duration": "5h"})
    assert second["end"] == at(START + 7 * H)
    # an extension counts too
    status, problem = lab.alice.patch(f"/reservations/{first['id']}", {"extend_by": "1h"})
    assert status == 409 and problem["current_total"] == 5 * 3600
    lab.alice.delete(f"/reservations/{second['id']}")
    assert lab.alice.patch(f"/reservations/{first['id']}", {"extend_by": "1h"})[0] == 200
