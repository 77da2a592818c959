"""Many reservations ending in the same second are returned in chunks (worker_batch), each exactly once, with its
activity record and notice; a poisoned one fails alone, and one whose return has a cascade (a release action)
still gets it. The figures at scale: bench/expiry.py."""
from datetime import timedelta

import pytest
from sqlalchemy import event, select

from lablease.config import Settings
from lablease.services.handlers import unit_of_work
from lablease.store.tables import Activity, Outbox
from lablease.store.worker_tables import WorkerFailure
from lablease.worker.loop import run_due
from tests.support.poison import poison_updates

from .conftest import START, Lab

H = timedelta(hours=1)
POWER = {"driver": "ipmitool", "address": "bmc-p1", "user": "root", "password": "pw"}


@pytest.fixture
def lab(db, tmp_path):
    lab = Lab(db, Settings(data_dir=str(tmp_path / "data"), smtp_host="127.0.0.1", worker_batch=7))
    lab.alice.patch("/me", {"email": "alice@lab.test"})
    return lab


def commits(engine) -> list:
    seen = []
    event.listen(engine, "commit", lambda conn: seen.append(1))
    return seen


def test_fifty_due_in_the_same_second_are_returned_once_each_in_chunks(lab):
    for n in range(50):
        lab.system(f"s{n:02d}.lab.test")
    lab.system("p1.lab.test", power=POWER)  # returned one by one: its release action powers it off
    ids = [lab.alice.post("/reservations", {"system": f"s{n:02d}.lab.test", "duration": "1h"})[1]["id"]
           for n in range(50)]
    powered = lab.alice.post("/reservations", {"system": "p1.lab.test", "duration": "1h"})[1]["id"]
    poisoned = ids[10]
    poison_updates(lab.db.writer, "reservations", poisoned)
    transactions = commits(lab.db.writer)

    returned = run_due(lab.db, START + H, lab.settings)

    expected = [i for i in ids if i != poisoned] + [powered]
    assert sorted(returned) == sorted(expected) and len(returned) == len(set(returned))
    # 8 chunks of 7, the poisoned one's chunk again one by one (7) and its failure (1): far fewer than one each
    assert len(transactions) < len(expected) / 2
    with unit_of_work(lab.db, lab.settings, write=False) as uow:
        notices = [(o.destination, o.payload["reservation"]) for o in uow.session.execute(
            select(Outbox).where(Outbox.subject.like("%your reservation was returned"))).scalars()]
        failures = {(f.kind, f.item_id): f.error for f in uow.session.execute(select(WorkerFailure)).scalars()}
        logged = sorted(tuple(row) for row in uow.session.execute(select(
            Activity.object_type, Activity.object_id, Activity.old).where(Activity.action == "expired")))
    reservations = {r["id"]: r for r in lab.alice.get("/reservations?limit=1000")[1]}
    assert {i: reservations[i]["state"] for i in expected} == {i: "expired" for i in expected}
    assert reservations[poisoned]["state"] == "active"
    assert "poisoned row" in failures[("reservation_expiry", poisoned)]
    assert logged == sorted([("reservation", str(i), "active") for i in expected]  # each once, reservation and system
                            + [("system", reservations[i]["system"], str(i)) for i in expected])
    assert sorted(notices) == sorted(("alice@lab.test", ident) for ident in expected)
    assert [c["action"] for c in lab.admin.get("/systems/p1.lab.test/commands")[1]] == ["off"]
    assert run_due(lab.db, START + 2 * H, lab.settings) == []  # nothing twice


def test_a_missed_heartbeat_in_a_chunk_ends_the_reservation_then(lab):
    lab.system("s1.lab.test")
    lab.system("s2.lab.test")
    beat = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "8h", "heartbeat": "10m"})[1]
    plain = lab.alice.post("/reservations", {"system": "s2.lab.test", "duration": "1h"})[1]
    assert run_due(lab.db, START + H, lab.settings) == [beat["id"], plain["id"]]
    assert lab.alice.get(f"/reservations/{beat['id']}")[1]["end"] == "2026-11-22T13:00:00Z"
    assert [a["action"] for a in lab.alice.get(f"/reservations/{beat['id']}/activity")[1]] == [
        "heartbeat_missed", "reserved"]
    assert [a["action"] for a in lab.alice.get(f"/reservations/{plain['id']}/activity")[1]] == ["expired", "reserved"]
