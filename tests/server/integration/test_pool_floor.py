"""A pool's floor of idle Automated systems for the scheduler (docs/access.md, "A floor for automation"):
through the API, and under concurrent reserves on SQLite and PostgreSQL."""
import threading
from datetime import timedelta

import pytest

from lablease.domain.reserve import ReserveRequest
from lablease.domain.errors import Conflict
from lablease.domain.permissions import Actor
from lablease.domain.reservations import ReservationPolicy
from lablease.services.booking import reserve
from lablease.services.queue import wait_requests
from lablease.store.uow import UnitOfWork

from .conftest import START


def _pool(lab, n, floor, owner="alice"):
    for i in range(1, n + 1):
        lab.system(f"a{i}.lab.test", condition="automated", owner=owner)
    status, pool = lab.admin.post("/pools", {"name": "ci", "automation_floor": floor})
    assert status == 201 and pool["automation_floor"] == floor
    for i in range(1, n + 1):
        assert lab.admin.post("/pools/ci/systems", {"fqdn": f"a{i}.lab.test"})[0] == 200


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # the concurrent test covers PostgreSQL
def test_a_loan_or_reservation_that_would_go_below_the_floor_is_refused(lab):
    _pool(lab, 3, 2)
    assert lab.admin.post("/systems/a1.lab.test/loan", {"recipient": "bob"})[0] == 201  # 3 idle: leaves 2
    status, problem = lab.admin.post("/systems/a2.lab.test/loan", {"recipient": "bob"})
    assert status == 409 and (problem["pool"], problem["floor"], problem["idle"]) == ("ci", 2, 2)
    assert "pool ci keeps a floor of 2" in problem["detail"]
    # the owner (not an admin) may not reserve it either, force or not
    assert lab.alice.post("/reservations", {"system": "a2.lab.test", "duration": "1h"})[0] == 409
    assert lab.alice.post("/reservations", {"system": "a2.lab.test", "duration": "1h", "force": True})[0] == 409
    # bob's own loaned system is no longer idle for automation: reserving it takes nothing from the floor
    assert lab.bob.post("/reservations", {"system": "a1.lab.test", "duration": "1h"})[0] == 201
    # an admin forces it
    status, made = lab.admin.post("/reservations", {"system": "a2.lab.test", "duration": "1h", "force": True})
    assert status == 201, made
    # a lower floor lets the owner in; the pool says its floor
    assert lab.admin.patch("/pools/ci", {"automation_floor": 0})[1]["automation_floor"] == 0
    assert lab.alice.post("/reservations", {"system": "a3.lab.test", "duration": "1h"})[0] == 201
    assert lab.admin.patch("/pools/ci", {"automation_floor": -1})[0] == 422


def test_concurrent_reserves_never_both_pass_the_floor(lab):
    """Five idle, floor 3: of four owners' reserves at the same instant exactly two pass, each round."""
    _pool(lab, 5, 3)
    alice = Actor(2, "alice")
    for round_ in range(3):
        outcomes = []
        barrier = threading.Barrier(4)

        def attempt(fqdn):
            barrier.wait()
            try:
                with UnitOfWork(lab.db, read_first=True) as uow:  # as the API opens it
                    made, _ = reserve.reserve(uow, alice, START, ReservationPolicy(), ReserveRequest(fqdn))
                    uow.commit()
                outcomes.append(made["id"])
            except Conflict as refused:
                assert refused.extra["pool"] == "ci", refused.detail
                outcomes.append(None)

        threads = [threading.Thread(target=attempt, args=(f"a{i}.lab.test",)) for i in range(1, 5)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        made = [o for o in outcomes if o is not None]
        assert len(outcomes) == 4 and len(made) == 2, (round_, outcomes)
        for ident in made:
            assert lab.alice.delete(f"/reservations/{ident}")[0] == 204


def _idle_automated(lab):
    """What the floor counts: the pool's Automated systems nobody holds now."""
    _, reservations = lab.admin.get("/reservations", active=True)
    held = {r["system"] for r in reservations if r["state"] == "active"}
    return 3 - len(held)


def test_a_reservation_that_would_go_below_the_floor_waits_when_asked_and_is_granted_when_one_frees(lab):
    """Three idle, floor 2: the second reserve is refused; with wait it waits, and is granted when the first
    is given back; a lower floor lets the next wait in; the pool never goes below its floor."""
    _pool(lab, 3, 2)
    status, first = lab.alice.post("/reservations", {"system": "a1.lab.test", "duration": "1h"})
    assert status == 201 and _idle_automated(lab) == 2
    status, problem = lab.alice.post("/reservations", {"system": "a2.lab.test", "duration": "1h"})
    assert status == 409 and problem["pool"] == "ci", problem
    status, named = lab.alice.post("/reservations", {"wait": True, "system": "a2.lab.test", "duration": "1h"})
    assert status == 202 and named["state"] == "waiting" and named["position"] == 1, named
    assert _idle_automated(lab) == 2  # the floor holds while it waits

    lab.clock.advance(minutes=5)
    assert lab.alice.delete(f"/reservations/{first['id']}")[0] == 204  # a1 frees: the pool has one to spare
    status, granted = lab.alice.get(f"/reservations/{named['id']}")
    assert granted["state"] == "active" and granted["system"] == "a2.lab.test", granted
    assert granted["start"] == "2026-11-22T12:05:00Z" and _idle_automated(lab) == 2

    # By pool: a1 or a3 would leave 1, so it waits; a lower floor lets it in; an admin's force is exempt.
    status, by_pool = lab.alice.post("/reservations", {"wait": True, "pools": ["ci"], "duration": "1h"})
    assert status == 202 and by_pool["state"] == "waiting", by_pool
    assert lab.admin.patch("/pools/ci", {"automation_floor": 1})[0] == 200
    status, granted = lab.alice.get(f"/reservations/{by_pool['id']}")
    assert granted["state"] == "active" and granted["system"] == "a1.lab.test", granted
    assert _idle_automated(lab) == 1
    status, _ = lab.alice.post("/reservations", {"wait": True, "pools": ["ci"], "duration": "1h"})  # a3 would leave 0
    assert status == 202 and _idle_automated(lab) == 1
    status, forced = lab.admin.post("/reservations?force=true", {"wait": True, "pools": ["ci"], "duration": "1h"})
    assert status == 201 and forced["state"] == "active" and forced["system"] == "a3.lab.test", forced


def test_concurrent_waits_are_never_granted_past_the_floor(lab):
    """Five idle, floor 3: four owners' waits for different systems at the same instant: exactly two are
    granted at once, the other two wait (the grant counts under the reserve's lock)."""
    _pool(lab, 5, 3)
    alice = Actor(2, "alice")
    outcomes, barrier = [], threading.Barrier(4)

    def attempt(fqdn):
        barrier.wait()
        with UnitOfWork(lab.db, read_first=True) as uow:  # as the API opens it
            asked = wait_requests.WaitRequest(fqdn, duration=timedelta(hours=1))
            made, _ = wait_requests.enqueue(uow, alice, START, ReservationPolicy(), asked)
            uow.commit()
            outcomes.append(made.system_id is not None)

    threads = [threading.Thread(target=attempt, args=(f"a{i}.lab.test",)) for i in range(1, 5)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == [False, False, True, True], outcomes
    _, held = lab.admin.get("/reservations", active=True)
    assert len([r for r in held if r["state"] == "active"]) == 2
