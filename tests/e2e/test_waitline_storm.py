"""End to end, on a real `lablease-server serve` over SQLite and PostgreSQL: 16 clients wait on a pool of
4 systems (docs/scheduler.md, "People in the queue"). Each is granted exactly once, in the queue's order,
and no two bookings of a system overlap. No test here measures speed."""
from __future__ import annotations

import threading
import time

from .test_storm import add_systems, add_users, overlapping_pairs

CLIENTS, SYSTEMS = 16, 4
USERS = ("ada", "bob", "cyd", "dee")


def test_sixteen_waiting_on_four_systems_are_each_granted_once_in_order(live_server, tmp_path):
    systems = [f"line{i}.lab.test" for i in range(SYSTEMS)]
    add_systems(live_server, tmp_path, *systems)
    add_users(live_server, USERS)
    admin = live_server.admin
    assert admin.post("/pools", json={"name": "line"}).status_code == 201
    for fqdn in systems:
        assert admin.post("/pools/line/systems", json={"fqdn": fqdn}).status_code < 300
    holders = [admin.post("/reservations", json={"system": fqdn, "duration": "1h"}).json() for fqdn in systems]

    start, queued = threading.Barrier(CLIENTS), threading.Semaphore(0)
    answers, failures, positions = [None] * CLIENTS, [], {}
    all_queued = threading.Event()

    def client(index: int) -> None:
        api = live_server.api(USERS[index % len(USERS)])
        try:
            start.wait()
            answer = api.post("/reservations", json={"wait": True, "pools": ["line"], "duration": "1h",
                                                     "request_id": f"line-{index}"})
            answers[index] = (answer.status_code, answer.json())
            queued.release()
            mine = answer.json()["id"]
            all_queued.wait(60)
            deadline = time.monotonic() + 60
            # A grant starts at its own moment: a read whose request began a moment before that grant committed
            # sees it "upcoming" for those milliseconds, so the wait is for "active"
            while (now := api.get(f"/reservations/{mine}").json())["state"] in ("waiting", "upcoming"):
                assert time.monotonic() < deadline, f"reservation {mine} never became active: {now}"
                time.sleep(0.2)
            assert now["state"] == "active", now
            # granted in order: nobody ahead of it is still waiting once it holds a system
            ahead = {rid for rid, place in positions.items() if place < positions[mine]}
            open_ = admin.get("/reservations", params={"active": "true", "limit": 100}).json()
            still = [r["id"] for r in open_ if r["id"] in ahead and r["state"] == "waiting"]
            assert not still, f"{mine} (position {positions[mine]}) was granted before {still}"
            assert api.delete(f"/reservations/{mine}").status_code == 204
        except Exception as error:  # noqa: BLE001 - reported by the test below
            failures.append(f"client {index}: {error!r}")
            queued.release()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
    for thread in threads:
        thread.start()
    for _ in range(CLIENTS):
        assert queued.acquire(timeout=60)
    assert not failures, failures
    assert {status for status, _ in answers} == {202}, answers  # nothing was free: all wait
    ids = [body["id"] for _, body in answers]
    positions.update({rid: admin.get(f"/reservations/{rid}").json()["position"] for rid in ids})
    assert sorted(positions.values()) == list(range(1, CLIENTS + 1))  # one queue, one place each
    all_queued.set()
    returns = [threading.Thread(target=admin.delete, args=(f"/reservations/{h['id']}",)) for h in holders]
    for thread in returns:
        thread.start()
    for thread in threads + returns:
        thread.join(120)
    assert not failures, failures

    granted = {rid: admin.get(f"/reservations/{rid}").json() for rid in ids}
    assert all(r["state"] == "returned" and r["system"] in systems for r in granted.values()), granted
    for rid in ids:  # granted exactly once
        log = admin.get(f"/reservations/{rid}/activity").json()
        assert [e["action"] for e in log].count("granted") == 1, log
    for fqdn in systems:
        booked = admin.get("/reservations", params={"system": fqdn}).json()
        assert overlapping_pairs(booked) == [], fqdn
    assert sum(len(admin.get("/reservations", params={"system": f}).json()) for f in systems) == CLIENTS + SYSTEMS
