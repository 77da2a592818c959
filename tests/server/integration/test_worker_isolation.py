"""The worker handles each due item in a transaction of its own: a poisoned one (its row cannot be
written: a trigger planted straight into the database) is parked with its error and logged once, the
others are handled, and it is not tried again. Removing a distro tree aborts the recipes that needed it
at once. The whole story with a real server and restarts: tests/e2e/test_worker_isolation_e2e.py."""
from datetime import timedelta

import pytest

from sqlalchemy import select, text

from lablease.services.handlers import unit_of_work
from lablease.store.worker_tables import WorkerFailure
from lablease.worker.loop import Worker, run_due
from tests.support.poison import poison_updates

from .conftest import START, Lab
from .test_provisioning_api import TREE, provisionable, setup
from .test_scheduler import Scheduler, automated, job, recipe

H = timedelta(hours=1)


def parked(lab) -> dict:
    with unit_of_work(lab.db, lab.settings, write=False) as uow:
        return {(f.kind, f.item_id): f.error for f in uow.session.execute(select(WorkerFailure)).scalars()}


def test_a_poisoned_reservation_is_parked_and_the_others_expire(lab, caplog):
    for n in (1, 2, 3):
        lab.system(f"s{n}.lab.test")
    ids = [lab.alice.post("/reservations", {"system": f"s{n}.lab.test", "duration": "1h"})[1]["id"] for n in (1, 2, 3)]
    poison_updates(lab.db.writer, "reservations", ids[0])
    assert run_due(lab.db, START + H, lab.settings) == ids[1:]
    assert "poisoned row" in parked(lab)[("reservation_expiry", ids[0])]
    assert [r.getMessage().split(":")[0] for r in caplog.records if r.levelname == "ERROR"] == [
        f"reservation_expiry {ids[0]} failed"]
    _, activity = lab.alice.get(f"/reservations/{ids[0]}/activity")
    assert activity[0]["action"] == "worker_failed" and "poisoned row" in activity[0]["new"]
    caplog.clear()
    assert run_due(lab.db, START + 2 * H, lab.settings) == []  # not tried again
    assert not [r for r in caplog.records if r.levelname == "ERROR"]
    assert lab.alice.get(f"/reservations/{ids[0]}")[1]["state"] == "active"
    assert lab.alice.delete(f"/reservations/{ids[1]}")[0] == 409  # the others really were returned


def test_a_poisoned_installation_watchdog_and_warning(lab):
    setup(lab)
    provisionable(lab, "p2.lab.test", netboot={"mac": "52:54:00:aa:bb:02"},
                  power={"driver": "ipmitool", "address": "bmc-p2", "user": "root", "password": "pw"})
    lab.alice.post("/reservations", {"system": "p2.lab.test", "duration": "8h"})
    first = lab.alice.post("/systems/p1.lab.test/provision", {"distro_tree": "Fedora-40"})[1]
    second = lab.alice.post("/systems/p2.lab.test/provision", {"distro_tree": "Fedora-40"})[1]
    poison_updates(lab.db.writer, "installations", first["id"])
    run_due(lab.db, START + 2 * H, lab.settings)
    assert lab.alice.get(f"/installations/{second['id']}")[1]["status"] == "failed"
    assert lab.alice.get(f"/installations/{first['id']}")[1]["status"] == "queued"
    assert ("installation_watchdog", first["id"]) in parked(lab)


def test_a_poisoned_recipe_watchdog_and_repair(db):
    lab = Lab(db)
    sched = Scheduler(lab)
    automated(lab, "a1.lab.test", "a2.lab.test")
    running = [sched.recipes(sched.submit("alice", job([recipe(runtime_limit=3600)])))[0] for _ in range(2)]
    poison_updates(lab.db.writer, "recipes", running[0]["id"])
    run_due(lab.db, START + H, lab.settings)
    assert sched.recipe(running[1]["id"])["status"] == "aborted"
    assert sched.recipe(running[0]["id"])["status"] == "running"
    assert ("recipe_watchdog", running[0]["id"]) in parked(lab)


def test_removing_a_distro_tree_aborts_the_recipes_waiting_for_it_at_once(lab):
    _, tree = lab.admin.post("/distro-trees", TREE)
    lab.admin.post("/distro-trees", {**TREE, "name": "Fedora-41"})
    wants = {"field": "distro_name", "op": "=", "value": "Fedora-40"}
    busy = {"field": "hostname", "op": "=", "value": "busy.lab.test"}
    lab.system("busy.lab.test", condition="automated")
    lab.admin.post("/reservations", {"system": "busy.lab.test", "duration": "8h"})  # so the recipes wait
    status, submitted = lab.alice.post("/jobs", {"recipe_sets": [{"recipes": [
        {"distro_requires": wants, "host_requires": busy}]}, {"recipes": [
        {"distro_requires": {**wants, "value": "Fedora-41"}, "host_requires": busy}]}]})
    assert status == 201, submitted
    first, second = (rs["recipes"][0]["id"] for rs in submitted["recipe_sets"])
    assert lab.alice.get(f"/recipes/{first}")[1]["status"] == "queued"
    assert lab.admin.delete(f"/distro-trees/{tree['id']}")[0] == 204
    assert lab.alice.get(f"/recipes/{first}")[1]["status"] == "aborted"  # no worker pass in between
    assert lab.alice.get(f"/recipes/{second}")[1]["status"] == "queued"


def test_a_poisoned_repair_is_parked(lab):
    _, tree = lab.admin.post("/distro-trees", TREE)
    lab.system("busy.lab.test", condition="automated")
    lab.admin.post("/reservations", {"system": "busy.lab.test", "duration": "8h"})
    wants = {"field": "distro_name", "op": "=", "value": "Fedora-40"}
    busy = {"field": "hostname", "op": "=", "value": "busy.lab.test"}
    body = {"recipe_sets": [{"recipes": [{"distro_requires": wants, "host_requires": busy}]}]}
    ids = [lab.alice.post("/jobs", body)[1]["recipe_sets"][0]["recipes"][0]["id"] for _ in range(2)]
    with unit_of_work(lab.db, lab.settings) as uow:  # the tree vanished behind the server's back
        uow.session.execute(text("DELETE FROM distro_trees"))
        uow.commit()
    poison_updates(lab.db.writer, "recipes", ids[0])
    worker = Worker(lab.settings, lab.db, lab.clock)
    worker.repair_if_due()
    worker.commands.stop()
    assert lab.alice.get(f"/recipes/{ids[1]}")[1]["status"] == "aborted"
    assert lab.alice.get(f"/recipes/{ids[0]}")[1]["status"] == "queued"
    assert ("recipe_repair", ids[0]) in parked(lab)


def test_a_transient_database_error_is_tried_again_not_parked(lab):
    """A deadlock says nothing about the item: it is handled at a later pass (PostgreSQL's error codes)."""
    if lab.db.dialect != "postgresql":
        pytest.skip("raising a deadlock from a trigger needs PostgreSQL")
    lab.system()
    _, r = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "1h"})
    with lab.db.writer.begin() as db:
        db.execute(text("CREATE FUNCTION deadlocked() RETURNS trigger AS $$ BEGIN "
                        "RAISE EXCEPTION 'deadlock detected' USING ERRCODE = '40P01'; END $$ LANGUAGE plpgsql"))
        db.execute(text("CREATE TRIGGER deadlocked BEFORE UPDATE ON reservations FOR EACH ROW "
                        "EXECUTE FUNCTION deadlocked()"))
    assert run_due(lab.db, START + H, lab.settings) == []
    assert parked(lab) == {}
    with lab.db.writer.begin() as db:
        db.execute(text("DROP TRIGGER deadlocked ON reservations"))
    assert run_due(lab.db, START + H, lab.settings) == [r["id"]]
