"""Whether anything could take a freed system: when nothing could, a return skips the SystemFreed handlers
(store/queries.py `freed_system_wanted`). Each way it could be wanted is shown turning the answer to yes."""
from datetime import timedelta

from lablease.config import Settings
from sqlalchemy import select

from lablease.store.queries import freed_system_wanted
from lablease.store.tables import System
from lablease.store.uow import UnitOfWork
from lablease.worker.loop import run_due

from .conftest import START, Lab, at
from .test_scheduler import Scheduler, job, recipe


def wanted(lab, fqdn: str) -> bool:
    with UnitOfWork(lab.db, write=False) as uow:
        system_id = uow.session.execute(select(System.id).where(System.fqdn == fqdn)).scalar_one()
        return freed_system_wanted(uow.session, system_id)


def test_a_waiting_reservation_or_waiting_work_makes_a_system_wanted(db):
    lab = Lab(db)
    lab.system("s1.lab.test")
    lab.system("a1.lab.test", condition="automated")
    lab.system("a2.lab.test", condition="automated")
    assert lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "1h"})[0] == 201
    assert lab.admin.post("/reservations", {"system": "a1.lab.test", "duration": "1h"})[0] == 201
    assert not wanted(lab, "s1.lab.test") and not wanted(lab, "a1.lab.test")

    status, waiting = lab.bob.post("/reservations", {"wait": True, "system": "s1.lab.test", "duration": "1h"})
    assert status == 202, waiting
    assert wanted(lab, "s1.lab.test") and not wanted(lab, "a1.lab.test")

    assert lab.admin.post("/pools", {"name": "ci", "automation_floor": 1})[0] == 201
    assert lab.admin.post("/pools/ci/systems", {"fqdn": "a1.lab.test"})[0] == 200
    assert wanted(lab, "a1.lab.test")  # a wait the floor held back on a peer may be granted once it is free
    assert lab.admin.patch("/pools/ci", {"automation_floor": 0})[0] == 200
    assert not wanted(lab, "a1.lab.test")

    assert lab.admin.post("/reservations", {"system": "a2.lab.test", "duration": "1h"})[0] == 201
    queued = Scheduler(lab).submit("bob", job([recipe()]))  # no free Automated system: it waits
    assert queued["recipe_sets"][0]["recipes"][0]["status"] == "queued"
    assert wanted(lab, "a1.lab.test")  # waiting work: the queue's head may take any Automated system
    assert wanted(lab, "s1.lab.test")
    assert lab.bob.delete(f"/reservations/{waiting['id']}")[0] == 204
    assert not wanted(lab, "s1.lab.test")  # a Manual system runs no recipe; its wait has left the line


def test_a_running_advance_reservation_that_holds_it_makes_it_wanted(db, tmp_path):
    lab = Lab(db, Settings(data_dir=str(tmp_path / "data"), ar_duration_offset="1m"))
    lab.in_arusers("alice")
    lab.system("a1.lab.test", condition="automated")
    status, granted = lab.alice.post("/advance-reservations", {"start": at(START + timedelta(hours=1)),
                                                               "duration": "2h", "count": 1})
    assert status == 201, granted
    assert not wanted(lab, "a1.lab.test")  # granted, not yet running: nothing of it may run now
    run_due(lab.db, START + timedelta(hours=1), lab.settings)
    lab.clock.now = START + timedelta(hours=1)
    assert lab.alice.get(f"/advance-reservations/{granted['id']}")[1]["state"] == "r"
    assert wanted(lab, "a1.lab.test")
