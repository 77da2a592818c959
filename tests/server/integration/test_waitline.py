"""The waiting line for people: POST /reservations with wait, on SQLite and PostgreSQL (docs/scheduler.md)."""
from datetime import timedelta

import pytest

from lablease.config import Settings
from lablease.services.messages import outbox
from lablease.services.handlers import unit_of_work
from lablease.worker.loop import run_due

from .conftest import START, Lab, at
from .test_scheduler import Scheduler, job, recipe

H = timedelta(hours=1)


@pytest.fixture
def lab(db, tmp_path):
    # mail configured (nothing listens: the outbox is what is checked), so notices are queued
    return Lab(db, Settings(data_dir=str(tmp_path / "data"), smtp_host="127.0.0.1", smtp_port=9))


def waits(caller, **body):
    status, reservation = caller.post("/reservations", {"wait": True, **body})
    assert status == 202, reservation
    assert reservation["state"] == "waiting" and reservation["system"] is None
    return reservation


def test_a_wait_is_granted_when_the_holder_returns_and_the_holder_is_told(lab):
    lab.system()
    lab.bob.patch("/me", {"email": "bob@lab.test"})
    _, held = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "2h"})
    waiting = waits(lab.bob, system="s1.lab.test", duration="3h")
    assert waiting["position"] == 1 and waiting["estimated_start"] == at(START + 2 * H)  # the holder's end
    _, listed = lab.bob.get("/reservations")
    assert [(r["id"], r["state"], r["position"]) for r in listed] == [(waiting["id"], "waiting", 1)]

    lab.clock.advance(minutes=30)
    assert lab.alice.delete(f"/reservations/{held['id']}")[0] == 204
    _, granted = lab.bob.get(f"/reservations/{waiting['id']}")
    assert granted["state"] == "active" and granted["system"] == "s1.lab.test"
    # its duration counts from the grant, not from the request
    assert granted["start"] == at(START + H / 2) and granted["end"] == at(START + H / 2 + 3 * H)
    assert granted["position"] is None and granted["wait"]["granted_at"] == at(START + H / 2)
    with unit_of_work(lab.db, lab.settings) as uow:
        subjects = [m["subject"] for m in outbox.listing(uow)]
    assert "[lablease] your reservation of s1.lab.test started" in subjects
    # the system is really booked: a third user is refused
    assert lab.admin.post("/reservations", {"system": "s1.lab.test", "duration": "1h"})[0] == 409


def test_a_free_system_is_granted_at_once(lab):
    lab.system()
    status, reservation = lab.bob.post("/reservations", {"wait": True, "system": "s1.lab.test", "duration": "1h"})
    assert status == 201 and reservation["state"] == "active" and reservation["system"] == "s1.lab.test"


def test_waits_are_granted_by_priority_then_age_and_nobody_twice(lab):
    lab.system()
    carol = lab.user("carol")
    _, held = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "2h"})
    first = waits(lab.bob, system="s1.lab.test", duration="1h")
    lab.clock.advance(minutes=1)
    urgent = waits(carol, system="s1.lab.test", duration="1h", priority="High")
    lab.clock.advance(minutes=1)
    last = waits(lab.admin, system="s1.lab.test", duration="1h")
    assert [lab.admin.get(f"/reservations/{r['id']}")[1]["position"] for r in (urgent, first, last)] == [1, 2, 3]

    order = []
    for holder in (held, urgent, first):
        owner = {held["id"]: lab.alice, urgent["id"]: carol, first["id"]: lab.bob}[holder["id"]]
        assert owner.delete(f"/reservations/{holder['id']}")[0] == 204
        states = {r["id"]: lab.admin.get(f"/reservations/{r['id']}")[1]["state"] for r in (urgent, first, last)}
        order.append(next(i for i, s in states.items() if s == "active"))
    assert order == [urgent["id"], first["id"], last["id"]]


def test_a_wait_on_a_pool_takes_the_first_system_freed(lab):
    for name in ("p1", "p2"):
        lab.system(f"{name}.lab.test")
    lab.system("other.lab.test")
    assert lab.admin.post("/pools", {"name": "rack"})[0] == 201
    for name in ("p1", "p2"):
        assert lab.admin.post("/pools/rack/systems", {"fqdn": f"{name}.lab.test"})[0] == 200
    held = {name: lab.alice.post("/reservations", {"system": f"{name}.lab.test", "duration": f"{n}h"})[1]
            for n, name in ((2, "p1"), (1, "p2"))}
    waiting = waits(lab.bob, pools=["rack"], duration="1h")
    assert waiting["estimated_start"] == at(START + H)  # the sooner of the two ends
    lab.alice.delete(f"/reservations/{held['p1']['id']}")
    assert lab.bob.get(f"/reservations/{waiting['id']}")[1]["system"] == "p1.lab.test"


def test_a_wait_joins_the_same_queue_as_recipes(db):
    lab = Lab(db)
    sched = Scheduler(lab)
    lab.system("a1.lab.test", condition="automated")
    assert lab.admin.post("/systems/a1.lab.test/loan", {"recipient": "alice"})[0] == 201
    [first] = sched.recipes(sched.submit("alice", job([recipe()])))
    assert first["system"] == "a1.lab.test"
    lab.clock.advance(minutes=1)
    [before] = sched.recipes(sched.submit("alice", job([recipe()])))
    lab.clock.advance(minutes=1)
    waiting = waits(lab.alice, system="a1.lab.test", duration="1h")
    assert waiting["position"] == 2  # the recipe set queued before it is ahead
    lab.clock.advance(minutes=1)
    [after] = sched.recipes(sched.submit("alice", job([recipe()])))

    sched.finish(first["id"])
    assert sched.recipe(before["id"])["system"] == "a1.lab.test"  # older: it goes first
    assert lab.alice.get(f"/reservations/{waiting['id']}")[1]["position"] == 1
    sched.finish(before["id"])
    _, granted = lab.alice.get(f"/reservations/{waiting['id']}")
    assert granted["state"] == "active" and granted["system"] == "a1.lab.test"
    assert sched.recipe(after["id"])["status"] == "queued"  # younger than the wait: behind it
    lab.alice.delete(f"/reservations/{waiting['id']}")
    assert sched.recipe(after["id"])["system"] == "a1.lab.test"


def test_cancel_while_waiting(lab):
    lab.system()
    _, held = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "2h"})
    waiting = waits(lab.bob, system="s1.lab.test")
    assert lab.alice.delete(f"/reservations/{waiting['id']}")[0] == 404  # only its holder and admins see it
    assert lab.bob.delete(f"/reservations/{waiting['id']}")[0] == 204
    _, cancelled = lab.bob.get(f"/reservations/{waiting['id']}")
    assert cancelled["state"] == "cancelled" and cancelled["system"] is None
    lab.alice.delete(f"/reservations/{held['id']}")
    assert lab.bob.get(f"/reservations/{waiting['id']}")[1]["state"] == "cancelled"  # never granted after
    assert lab.bob.patch(f"/reservations/{waiting['id']}", {"extend_by": "1h"})[0] == 409


def test_take_by_returns_a_grant_nobody_confirmed(lab):
    lab.system()
    _, held = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "1h"})
    forgot = waits(lab.bob, system="s1.lab.test", duration="4h", take_by="10m")
    lab.alice.delete(f"/reservations/{held['id']}")
    assert lab.bob.get(f"/reservations/{forgot['id']}")[1]["due"] == at(START + 10 * timedelta(minutes=1))
    assert run_due(lab.db, START + timedelta(minutes=9), lab.settings) == []
    assert run_due(lab.db, START + timedelta(minutes=10), lab.settings) == [forgot["id"]]
    _, returned = lab.bob.get(f"/reservations/{forgot['id']}")
    assert returned["state"] == "expired" and returned["returned_at"] == at(START + timedelta(minutes=10))


def test_take_by_is_met_by_a_heartbeat(lab):
    lab.system()
    _, held = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "1h"})
    kept = waits(lab.bob, system="s1.lab.test", duration="4h", take_by="10m")
    lab.alice.delete(f"/reservations/{held['id']}")
    lab.clock.advance(minutes=5)
    status, confirmed = lab.bob.post(f"/reservations/{kept['id']}/heartbeat")
    assert status == 200 and confirmed["due"] == at(START + 4 * H)
    assert run_due(lab.db, START + timedelta(minutes=10), lab.settings) == []


def test_a_retried_wait_with_its_request_id_is_the_same_reservation(lab):
    lab.system()
    lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "1h"})
    first = waits(lab.bob, system="s1.lab.test", request_id="ci-42")
    status, again = lab.bob.post("/reservations", {"wait": True, "system": "s1.lab.test", "request_id": "ci-42"})
    assert status == 200 and again["id"] == first["id"]
    _, mine = lab.bob.get("/reservations")
    assert len(mine) == 1


def test_a_request_id_reused_for_another_wait_is_refused_naming_what_differs(lab):
    """One rule for every reserve with a request_id (domain/retries.py), waiting or granted since."""
    lab.system()
    lab.system("s2.lab.test")
    _, held = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "1h"})
    asked = {"wait": True, "system": "s1.lab.test", "duration": "2h", "heartbeat": "10m", "request_id": "ci-7"}
    first = waits(lab.bob, **asked)
    for change, differs in (({"duration": "3h"}, "duration (first 2h, now 3h)"),
                            ({"heartbeat": "20m"}, "heartbeat (first 10m, now 20m)"),
                            ({"system": "s2.lab.test"}, "system (first s1.lab.test, now s2.lab.test)"),
                            ({"take_by": "15m"}, "take_by (first none, now 15m)"),
                            ({"priority": "High"}, "priority (first Normal, now High)"),
                            ({"wait": False}, "wait (first true, now false)")):
        status, problem = lab.bob.post("/reservations", {**asked, **change})
        assert status == 409 and differs in problem["detail"], (change, problem)
    lab.alice.delete(f"/reservations/{held['id']}")  # granted now: compared all the same
    status, granted = lab.bob.post("/reservations", asked)
    assert (status, granted["id"], granted["state"]) == (200, first["id"], "active")
    status, problem = lab.bob.post("/reservations", {**asked, "duration": "3h"})
    assert status == 409 and "duration (first 2h, now 3h)" in problem["detail"]
    _, plain = lab.bob.post("/reservations", {"system": "s2.lab.test", "duration": "1h", "request_id": "ci-8"})
    status, problem = lab.bob.post("/reservations", {"wait": True, "system": "s2.lab.test", "duration": "1h",
                                                     "request_id": "ci-8"})
    assert status == 409 and "wait (first false, now true)" in problem["detail"]


BAD = [
    ({"wait": True}, "system", "give the system to reserve, or requires/pools to wait for any matching system"),
    ({"wait": True, "pools": ["nope"]}, "pools", "no pool named nope"),
    ({"wait": True, "system": "s1.lab.test", "start": "2026-11-23T00:00:00Z"}, "start",
     "a reservation that waits starts when it is granted"),
    ({"system": "s1.lab.test", "take_by": "10m"}, "take_by", "is only for a reservation that waits (wait: true)"),
    ({"wait": True, "system": "s1.lab.test", "take_by": "5s"}, "take_by", "must be at least 10 seconds"),
    ({"wait": True, "system": "s1.lab.test", "duration": "1h", "take_by": "2h"}, "take_by",
     "must be shorter than the reservation"),
    ({"wait": True, "requires": {"field": "arch", "op": "=", "value": "s390x"}}, None,
     "no system you may reserve matches: it would wait for ever"),
]


def test_bad_waits_are_refused_naming_the_field(lab):
    lab.system()
    for body, field, detail in BAD:
        status, problem = lab.bob.post("/reservations", body)
        assert status in (409, 422), problem
        if field is not None:
            assert problem["field"] == field, problem
        if detail is not None:
            assert detail in problem["detail"], problem
    _, mine = lab.bob.get("/reservations")
    assert mine == []  # nothing half-written


def test_a_wait_carries_its_purpose_and_needs_one_where_the_site_requires_it(db, tmp_path):
    lab = Lab(db, Settings(data_dir=str(tmp_path / "data"), require_purpose=True))
    lab.system()
    status, problem = lab.bob.post("/reservations", {"wait": True, "system": "s1.lab.test", "duration": "1h"})
    assert status == 422 and problem["field"] == "purpose", problem
    assert lab.bob.get("/reservations")[1] == []  # nothing half-written
    lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "1h", "purpose": "kernel bisect"})
    waiting = waits(lab.bob, system="s1.lab.test", duration="1h", purpose="driver soak test")
    assert waiting["purpose"] == "driver soak test"


def test_a_reservation_the_worker_returns_in_a_batch_hands_its_manual_system_to_the_line(lab):
    lab.system()  # Manual: the scheduler runs no recipe on it, people in the line may still get it
    _, held = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "1h"})
    waiting = waits(lab.bob, system="s1.lab.test", duration="1h")
    lab.clock.advance(hours=1)
    assert run_due(lab.db, START + H, lab.settings) == [held["id"]]  # the worker's expiry (services/lifecycle/expiry.py)
    _, granted = lab.bob.get(f"/reservations/{waiting['id']}")
    assert granted["state"] == "active" and granted["system"] == "s1.lab.test" and granted["start"] == at(START + H)
