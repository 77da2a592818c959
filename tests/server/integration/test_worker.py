"""The worker's expiry: on time, heartbeats, exactly once with concurrent workers."""
import threading
from datetime import timedelta

from sqlalchemy import func, select

from lablease.domain.reserve import ReserveRequest
from lablease.services.lifecycle import reservations
from lablease.services.booking import reserve
from lablease.store.tables import Activity
from lablease.store.uow import UnitOfWork
from lablease.worker.loop import Worker, next_due, run_due

from .conftest import START, at


def test_reservations_are_returned_at_their_end(lab):
    lab.system()
    _, r = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "1h"})
    assert next_due(lab.db, START) == START + timedelta(hours=1)
    assert run_due(lab.db, START + timedelta(minutes=59)) == []
    assert run_due(lab.db, START + timedelta(hours=1)) == [r["id"]]
    lab.clock.advance(hours=1)
    _, r = lab.alice.get(f"/reservations/{r['id']}")
    assert r["state"] == "expired" and r["returned_at"] == at(START + timedelta(hours=1))
    assert next_due(lab.db, START) is None


def test_a_missed_heartbeat_returns_the_reservation(lab):
    lab.system()
    _, r = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "4h", "heartbeat": "10m"})
    assert r["due"] == at(START + timedelta(minutes=10))
    lab.clock.advance(minutes=8)
    status, r = lab.alice.post(f"/reservations/{r['id']}/heartbeat")
    assert status == 200 and r["due"] == at(START + timedelta(minutes=18))
    assert run_due(lab.db, START + timedelta(minutes=17)) == []
    assert run_due(lab.db, START + timedelta(minutes=18)) == [r["id"]]
    lab.clock.advance(minutes=10)
    _, r = lab.alice.get(f"/reservations/{r['id']}")
    assert r["state"] == "expired"
    _, log = lab.alice.get(f"/reservations/{r['id']}/activity")
    assert log[0]["action"] == "heartbeat_missed" and log[0]["user"] == "lablease"
    status, problem = lab.alice.post(f"/reservations/{r['id']}/heartbeat")
    assert status == 409 and "already returned" in problem["detail"]


def test_heartbeat_needs_an_interval(lab):
    lab.system()
    _, r = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "4h"})
    status, problem = lab.alice.post(f"/reservations/{r['id']}/heartbeat")
    assert status == 422 and problem["field"] == "heartbeat"


def test_concurrent_workers_return_each_reservation_exactly_once(lab):
    for n in range(12):
        lab.system(f"s{n}.lab.test")
        lab.alice.post("/reservations", {"system": f"s{n}.lab.test", "duration": "1h"})
    barrier = threading.Barrier(4)
    results = []

    def worker():
        barrier.wait()
        results.append(run_due(lab.db, START + timedelta(hours=2)))

    threads = [threading.Thread(target=worker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    handled = [rid for batch in results for rid in batch]
    assert len(handled) == 12 and len(set(handled)) == 12
    with UnitOfWork(lab.db, write=False) as uow:
        expiries = uow.session.execute(
            select(func.count()).select_from(Activity).where(Activity.object_type == "reservation",
                                                              Activity.action == "expired")).scalar_one()
    assert expiries == 12


def test_worker_sleeps_until_the_next_due_time(lab):
    worker = Worker(lab.settings, lab.db, lab.clock)
    assert worker.seconds_to_sleep(START, None) == 300  # nothing due: the maximum sleep
    assert worker.seconds_to_sleep(START, START + timedelta(seconds=42)) == 42
    assert worker.seconds_to_sleep(START, START - timedelta(seconds=5)) == 0


def test_running_worker_is_woken_by_a_new_reservation(lab):
    """A real worker thread sleeping on an empty queue returns a 2-second reservation on time."""
    import time
    from datetime import datetime, timezone

    lab.system()
    worker = Worker(lab.settings, lab.db)  # the real clock
    worker.start()
    try:
        deadline = time.monotonic() + 10
        while worker.passes == 0:  # its first pass found nothing due: it sleeps for up to worker_max_sleep
            assert time.monotonic() < deadline, "the worker never finished its first pass"
            time.sleep(0.01)
        with UnitOfWork(lab.db, waker=lab.app.waker) as uow:
            from lablease.domain.permissions import Actor
            actor = Actor(2, "alice")
            r, _ = reserve.reserve(uow, actor, datetime.now(timezone.utc), lab.settings.reservation_policy,
                                   ReserveRequest("s1.lab.test", duration=timedelta(seconds=2)))
            uow.commit()
        deadline = time.monotonic() + 8
        while time.monotonic() < deadline:
            with UnitOfWork(lab.db, write=False) as uow:
                if reservations.get(uow, Actor(2, "alice"), datetime.now(timezone.utc), r["id"])["state"] == "expired":
                    break
            time.sleep(0.1)
        with UnitOfWork(lab.db, write=False) as uow:
            final = reservations.get(uow, Actor(2, "alice"), datetime.now(timezone.utc), r["id"])
        assert final["state"] == "expired"
    finally:
        worker.stop()


def test_the_heartbeat_can_be_changed_or_stopped(lab):
    lab.system()
    _, r = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "4h", "heartbeat": "10m"})
    lab.clock.advance(minutes=5)
    status, r = lab.alice.patch(f"/reservations/{r['id']}", {"heartbeat": "30m"})
    assert status == 200 and r["heartbeat"] == 1800 and r["due"] == at(START + timedelta(minutes=35))
    status, r = lab.alice.patch(f"/reservations/{r['id']}", {"heartbeat": None})
    assert status == 200 and r["heartbeat"] is None and r["due"] == at(START + timedelta(hours=4))
    assert run_due(lab.db, START + timedelta(hours=1)) == []


def test_a_burst_of_wake_ups_costs_a_few_passes(lab):
    """Hundreds of changes a second each wake the worker; their wake-ups collapse into one pass per wake_gap
    (a pass per wake-up had taken a core of its own under a burst of reserves)."""
    import time

    worker = Worker(lab.settings, lab.db)
    worker.wake_gap = 0.5
    worker.start()
    try:
        deadline = time.monotonic() + 10
        while worker.passes == 0:
            assert time.monotonic() < deadline, "the worker never finished its first pass"
            time.sleep(0.01)
        before, began, sent = worker.passes, time.monotonic(), 0
        while time.monotonic() - began < 1.5 or worker.passes == before:
            with UnitOfWork(lab.db, waker=lab.app.waker) as uow:
                uow.wake_worker()
                uow.commit()
            sent += 1
            assert time.monotonic() - began < 20, "the wake-ups never led to a pass"
        elapsed = time.monotonic() - began
        passes = worker.passes - before
    finally:
        worker.stop()
    assert sent >= 20
    assert 1 <= passes <= elapsed / worker.wake_gap + 2, (sent, passes, elapsed)
