"""Utilisation per pool: the worker aggregates closed hours once; the report adds them up."""
from datetime import timedelta

from sqlalchemy import func, select

from lablease.store.report_tables import UtilisationHour
from lablease.store.uow import UnitOfWork
from lablease.worker.loop import Worker

from .conftest import START, at

H = timedelta(hours=1)


def stored_hours(lab) -> int:
    with UnitOfWork(lab.db, write=False) as uow:
        return uow.session.execute(select(func.count()).select_from(UtilisationHour)).scalar_one()


def test_worker_aggregates_each_closed_hour_once_and_the_report_adds_them_up(lab):
    lab.system("m1.lab.test")
    lab.system("m2.lab.test")
    lab.admin.post("/pools", {"name": "racks"})
    lab.admin.post("/pools/racks/systems", {"fqdn": "m1.lab.test"})
    lab.clock.now = START + H
    _, taken = lab.alice.post("/reservations", {"system": "m1.lab.test", "duration": "2h"})
    lab.clock.now = START + 2 * H + timedelta(minutes=30)
    lab.admin.patch("/systems/m2.lab.test", {"condition": "broken"})
    worker = Worker(lab.settings, lab.db, lab.clock)
    lab.clock.now = START + 4 * H + timedelta(minutes=5)
    worker.run_pass()
    assert stored_hours(lab) == 4 + 4  # every system, then the pool: hours 12:00 to 15:00, all closed
    Worker(lab.settings, lab.db, lab.clock).run_pass()  # a worker of its own: it asks the database
    assert stored_hours(lab) == 8  # nothing new: an hour is never aggregated twice

    _, pool = lab.alice.get("/reports/utilisation/series", pool="racks", per="hour", **{"from": at(START)},
                            until=at(START + 4 * H))
    assert [(b["at"], b["manual"], b["idle"]) for b in pool["buckets"]] == [
        (at(START), 0, 3600), (at(START + H), 3600, 0), (at(START + 2 * H), 3600, 0), (at(START + 3 * H), 0, 3600)]
    assert pool["figures"]["busy"] == 0.5 and pool["aggregated_until"] == at(START + 4 * H)
    _, every = lab.alice.get("/reports/utilisation/series", **{"from": at(START)}, until=at(START + 4 * H))
    [day] = every["buckets"]
    assert (day["at"], day["systems"]) == (at(START.replace(hour=0)), 2)
    assert (day["manual"], day["broken"], day["idle"]) == (7200, 5400, 2 * 4 * 3600 - 7200 - 5400)
    assert lab.alice.get("/reports/utilisation/series", pool="nope")[1]["detail"] == "pool: no pool named nope"
    assert lab.alice.get("/reports/utilisation/series", per="week")[0] == 422
    assert taken["system"] == "m1.lab.test"
