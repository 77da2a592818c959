"""A reload and a worker restart of a real `lablease-server serve` under a steady load lose no request.

About 50 requests a second (lists, reserves, returns), each on a connection of its own as the collection's
modules and the CLI make them, while the server is sent SIGHUP (gunicorn's graceful reload, which also
replaces the background worker) and then the request worker is stopped (the arbiter starts another,
as when one is recycled).
Every request must be answered 2xx/4xx, or refused before it was accepted (a client retries that);
none may be reset or cut off once accepted. Long polls of the event feed in flight in the old workers
end with a complete answer and a usable cursor, not when gunicorn's graceful timeout runs out.
Then a newer schema: a reload on a database a newer lablease migrated stops the server, naming it.
"""
from __future__ import annotations

import collections
import http.client
import json
import os
import signal
import threading
import time
from pathlib import Path

import pytest
import requests
from sqlalchemy import create_engine, text

from tests.e2e.test_storm import add_systems
from tests.support.live import LiveServer

RATE = 50  # requests a second, all clients together
CLIENTS = 5
LONG_POLLS = 4


def children(pid: int) -> set[int]:
    found = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found |= {int(child) for child in (task / "children").read_text().split()}
    return found


def process_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except FileNotFoundError:
        return ""


def processes(server) -> tuple[set[int], int | None]:
    """(the request workers' pids, the background worker's pid) under the serving process."""
    kids = children(server.process.pid)
    worker = [pid for pid in kids if process_name(pid) == "lablease-worker"]
    return kids - set(worker), (worker[0] if worker else None)


def wait_for(condition, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def send(method: str, url: str, token: str, **kwargs) -> tuple[str, requests.Response | None]:
    """One request on a fresh connection, and its outcome as a client sees it."""
    try:
        answer = requests.request(method, url, headers={"Authorization": f"Bearer {token}"}, timeout=20, **kwargs)
    except requests.exceptions.RequestException as error:
        return outcome_of(error), None
    return f"{answer.status_code // 100}xx", answer


def outcome_of(error: Exception) -> str:
    if isinstance(error, requests.exceptions.ChunkedEncodingError):
        return "cut off"
    if isinstance(error, requests.exceptions.Timeout):
        return "timeout"
    # Refused: the connection was never accepted (a client retries it). Anything else after connecting: a reset.
    return "refused" if "Connection refused" in str(error) else "reset"


class Load:
    """CLIENTS threads sharing RATE requests a second: each reserves its own system, lists, returns, lists."""

    def __init__(self, server, token: str, systems: list[str]):
        self.server, self.token = server, token
        self.counts: collections.Counter = collections.Counter()
        self.lock = threading.Lock()
        self.done = threading.Event()
        self.threads = [threading.Thread(target=self.client, args=(fqdn,)) for fqdn in systems]

    def client(self, fqdn: str) -> None:
        api, interval = self.server.url + "/api/v1", CLIENTS / RATE
        next_at, reservation, step = time.monotonic(), None, 0
        while not self.done.is_set():
            if reservation is None:
                result, answer = send("POST", api + "/reservations", self.token,
                                      json={"system": fqdn, "duration": "10m"})
                reservation = answer.json()["id"] if result == "2xx" else None
            elif step % 2:
                result, _ = send("DELETE", api + f"/reservations/{reservation}", self.token)
                reservation = None if result in ("2xx", "4xx") else reservation
            else:
                result, _ = send("GET", api + "/systems", self.token, params={"limit": 20})
            step += 1
            with self.lock:
                self.counts[result] += 1
            next_at += interval
            self.done.wait(max(0.0, next_at - time.monotonic()))

    def __enter__(self):
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc):
        self.done.set()
        for thread in self.threads:
            thread.join(30)


POLLER = "127.0.0.2"  # the long polls' own source address, to tell their connections from the load's


def long_poll(server, token: str, cursor: str, results: list) -> None:
    """GET /events?wait=30 for a user who sees no event: only a stopping process ends it early."""
    started = time.monotonic()
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60, source_address=(POLLER, 0))
    try:
        connection.request("GET", f"/api/v1/events?after={cursor}&wait=30", headers={"Authorization": f"Bearer {token}"})
        answer = connection.getresponse()
        body = json.loads(answer.read())
        results.append((answer.status, body["events"], int(body["cursor"]) >= int(cursor),
                        time.monotonic() - started))
    except (OSError, http.client.HTTPException, ValueError) as error:
        results.append((None, repr(error), False, time.monotonic() - started))
    finally:
        connection.close()


def polls_held(pid: int) -> int:
    """How many connections from POLLER the process `pid` has accepted (read from /proc)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except FileNotFoundError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    poller = "".join(f"{int(part):02X}" for part in reversed(POLLER.split(".")))
    rows = [line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:]]
    return sum(1 for row in rows if row[2].startswith(poller + ":") and row[3] == "01" and row[9] in inodes)


def start_long_polls(server, token: str, cursor: str, results: list) -> list[threading.Thread]:
    """LONG_POLLS long polls, once the request worker holds every one of them."""
    server.wait_ready()
    (worker,) = processes(server)[0]
    polls = [threading.Thread(target=long_poll, args=(server, token, cursor, results)) for _ in range(LONG_POLLS)]
    for poll in polls:
        poll.start()
    wait_for(lambda: polls_held(worker) == LONG_POLLS)
    return polls


@pytest.fixture
def live_server(tmp_path, database_url):
    """One request worker, the hardest case: while its replacement starts, nobody else answers (connections
    wait in the listening socket's backlog), and every long poll is in the worker that stops."""
    server = LiveServer(tmp_path / "data", database_url, workers=1).start()
    yield server
    server.stop()


def test_reload_and_worker_restart_under_load_lose_no_request(live_server, tmp_path):
    systems = [f"load{n}.lab.test" for n in range(CLIENTS)]
    add_systems(live_server, tmp_path, *systems)
    live_server.add_user("watcher")  # owns nothing: sees no event, so a long poll of theirs waits it out
    token, watcher = live_server.tokens["admin"], live_server.tokens["watcher"]
    cursor = requests.get(live_server.url + "/api/v1/events", params={"after": "now"},
                          headers={"Authorization": f"Bearer {watcher}"}, timeout=10).json()["cursor"]
    old_workers, old_worker = processes(live_server)
    polls: list = []
    with Load(live_server, token, systems) as load:
        time.sleep(1)  # a steady load first
        threads = start_long_polls(live_server, watcher, cursor, polls)
        live_server.process.send_signal(signal.SIGHUP)
        wait_for(lambda: not old_workers & children(live_server.process.pid)
                 and len(processes(live_server)[0]) == live_server.workers)
        new_workers, new_worker = processes(live_server)
        for thread in threads:
            thread.join(30)
        threads = start_long_polls(live_server, watcher, cursor, polls)
        (stopped,) = new_workers
        os.kill(stopped, signal.SIGTERM)  # a request worker restarted (recycled, or stopped by hand)
        wait_for(lambda: stopped not in children(live_server.process.pid)
                 and len(processes(live_server)[0]) == live_server.workers)
        for thread in threads:
            thread.join(30)
        live_server.wait_ready()
        time.sleep(1)  # the load goes on against the replacement
    print(f"\noutcomes of {sum(load.counts.values())} requests: {dict(sorted(load.counts.items()))}")
    print("long polls (status, events, cursor kept, seconds):", polls)
    assert not new_workers & old_workers and new_worker not in (None, old_worker), "the reload replaced nobody"
    assert os.path.exists(f"/proc/{new_worker}")
    assert set(load.counts) <= {"2xx", "4xx", "refused"}, load.counts
    assert load.counts["2xx"] > 0
    assert len(polls) == 2 * LONG_POLLS
    for status, events, cursor_kept, seconds in polls:
        assert (status, events, cursor_kept) == (200, [], True)
        assert seconds < 10, "the long poll waited for gunicorn's graceful timeout instead of ending"

    # A newer lablease migrated the database: the next reload refuses to serve it, and says so.
    engine = create_engine(live_server.env["LABLEASE_DATABASE_URL"])
    with engine.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '9999_newer'"))
    engine.dispose()
    live_server.process.send_signal(signal.SIGHUP)
    assert live_server.process.wait(30) == 3
    log = live_server.read_log()
    assert "refusing to serve: the database is at schema revision 9999_newer" in log
