"""Chaos, end to end: real servers and workers while processes die and the database goes away.

PostgreSQL: two `serve --no-worker` servers and two `lablease-server worker` processes on one database,
under a storm of reserves, extends and returns through both servers (and power commands), while a worker
is killed -9 in the middle of a command, a server is killed -9 in the middle of the storm, and PostgreSQL
restarts. SQLite: the disk under the database fills up, then space returns.

Clients must get an answer within a bounded time (never a hang), 503 with Retry-After while the database
is away (never a 500), and the processes must come back by themselves. Afterwards: no overlapping
bookings, every acknowledged change present, every expiry handled once, every command finished.
The figures (requests, refusals, recovery time) are printed, for docs/failure-modes.md; nothing is timed.
"""
from __future__ import annotations

import os
import subprocess
import time
from collections import Counter
from contextlib import contextmanager
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support.chaos import ChaosStorm, Servers, unexpected, wait_until
from tests.support.live import LiveServer, LiveWorker

from .test_storm import overlapping_pairs, parse, rfc3339

POWERED = ("c1.lab.test", "c2.lab.test")
STORMED = tuple(f"s{i}.lab.test" for i in range(6))
USERS = ("ada", "bob")


@pytest.fixture
def cluster(tmp_path, postgres, pg_template):
    """The cluster on the session's PostgreSQL server: it restarts in the middle of the test, and is back before
    the test ends, while no other test runs in this process."""
    with cluster_on(tmp_path, postgres.create_database(f"chaos{os.getpid()}", pg_template)) as parts:
        yield parts


@contextmanager
def cluster_on(tmp_path, url: str):
    """Servers a and b (serve --no-worker) and workers w1 and w2 on one migrated PostgreSQL database (url), with
    the systems STORMED and POWERED (a power script of half a second) and the users USERS."""
    scripts = tmp_path / "power-scripts"
    scripts.mkdir()
    calls = tmp_path / "power-calls"
    # A power action of half a second; $PPID is the worker process that runs it.
    (scripts / "slow").write_text(f'#!/bin/sh\necho "start $LABLEASE_FQDN $PPID" >> {calls}\nsleep 0.5\n'
                                  f'echo "end $LABLEASE_FQDN $PPID" >> {calls}\n')
    (scripts / "slow").chmod(0o755)
    settings = {"secret_key": "chaos-site-key", "power_scripts_dir": scripts, "command_timeout": "3s",
                "command_retry_delay": "1s"}
    a = LiveServer(tmp_path / "a", url, settings, run_worker=False)
    b = LiveServer(tmp_path / "b", url, settings, run_worker=False)
    a.data_dir.mkdir(parents=True)
    a.admin = a.add_user("admin", admin=True)
    workers = []
    for name in ("w1", "w2"):
        (tmp_path / name).mkdir()
        workers.append(LiveWorker({**a.env, "LABLEASE_DATA_DIR": str(tmp_path / name)}, tmp_path / f"{name}.log"))
    try:
        for worker in workers:
            worker.launch()
        with ThreadPoolExecutor() as pool:  # together: each takes seconds
            list(pool.map(lambda step: step(), [lambda: a.start(init=False), lambda: b.start(init=False),
                                                *[lambda name=name: a.add_user(name) for name in USERS]]))
        b.tokens = a.tokens
        for fqdn in STORMED:
            assert a.admin.post("/systems", json={"fqdn": fqdn, "arch": "x86_64", "condition": "manual"}
                                ).status_code == 201
        for fqdn in POWERED:
            response = a.admin.post("/systems", json={"fqdn": fqdn, "arch": "x86_64", "condition": "manual",
                                                      "power": {"driver": "command", "script": "slow"}})
            assert response.status_code == 201, response.text
        yield a, b, workers, calls
    finally:
        for process in (a, b, *workers):  # nothing is left to check: no need to wait for a graceful stop
            if process.process is not None and process.process.poll() is None:
                process.kill9()


def running_in(calls_file, pid: int) -> bool:
    """A power script started by this worker process has not finished yet."""
    lines = calls_file.read_text().splitlines() if calls_file.exists() else []
    started = Counter(line.split(" ", 1)[1] for line in lines if line.startswith("start ") and line.endswith(f" {pid}"))
    ended = Counter(line.split(" ", 1)[1] for line in lines if line.startswith("end ") and line.endswith(f" {pid}"))
    return started - ended != Counter()


def first_write_after(storm: ChaosStorm, moment: float) -> dict[str, float]:
    """Per server, when the first reserve that reached the database (201 or 409) after `moment` was answered."""
    firsts: dict[str, float] = {}
    for call in storm.calls:
        if call.action == "reserve" and call.status in (201, 409) and call.sent >= moment:
            firsts[call.server] = min(firsts.get(call.server, call.answered), call.answered)
    return firsts


def test_postgresql_chaos_two_servers_two_workers(cluster, postgres):
    a, b, (w1, w2), calls_file = cluster
    servers = Servers({"a": a.url, "b": b.url})
    storm = ChaosStorm(servers, {user: a.tokens[user] for user in USERS}, STORMED)
    threads = storm.run(power=(POWERED, a.tokens["admin"]))
    killed: dict[str, tuple[float, float]] = {}
    marks = {"storm": time.time()}
    try:
        # A worker dies in the middle of a power command; it is started again, as systemd would.
        wait_until("a power command running in worker w1", lambda: running_in(calls_file, w1.process.pid))
        dead_worker = w1.process.pid
        marks["worker killed"] = time.time()
        w1.kill9()
        w1.launch()
        # A server dies in the middle of the storm: clients go to the other one meanwhile.
        wait_until("40 reservations", lambda: len(storm.acknowledged()) >= 40)
        servers.remove("b")
        killed["b"] = (time.time(), 0.0)
        b.kill9()
        b.launch()
        killed["b"] = (killed["b"][0], time.time())
        servers.add("b", b.url)
        marks["server back"] = time.time()
        wait_until("40 more reservations", lambda: len(storm.acknowledged()) >= 80)
        # PostgreSQL restarts; nobody restarts the servers or the workers.
        pids = (a.process.pid, b.process.pid, w1.process.pid, w2.process.pid)
        logged = [len(w.read_log()) for w in (w1, w2)]
        down = marks["postgresql stopped"] = time.time()
        postgres.stop_server("fast")
        wait_until("a 503 from each server", lambda: {
            c.server for c in storm.calls if c.status == 503 and c.sent >= down} == {"a", "b"}, timeout=15)
        for worker, offset in zip((w1, w2), logged):
            wait_until("the worker to meet the outage", lambda: "worker pass failed (database unavailable" in
                       worker.read_log()[offset:], timeout=15)
        postgres.start_server()
        up = marks["postgresql up"] = time.time()
        back = wait_until("a write through each server", lambda: (
            lambda firsts: firsts if set(firsts) == {"a", "b"} else None)(first_write_after(storm, up)))
        for worker, offset in zip((w1, w2), logged):
            wait_until("the worker's passes to work again",
                       lambda: "worker passes work again" in worker.read_log()[offset:], timeout=30)
        marks["workers recovered"] = time.time()
        settled = len(storm.acknowledged())
        wait_until("10 reservations after the restart", lambda: len(storm.acknowledged()) >= settled + 10)
    finally:
        if not postgres.is_up():  # the test failed during the outage: the session's other tests need it
            postgres.start_server()
        storm.stop.set()
        for thread in threads:
            thread.join(2 * 10)
    marks["storm over"] = time.time()
    assert (a.process.pid, b.process.pid, w1.process.pid, w2.process.pid) == pids
    assert all(p.process.poll() is None for p in (a, b, w1, w2)), "a server or worker died"

    problems = unexpected(storm.calls, killed)
    assert not problems, f"{len(problems)} calls broke the rules, e.g. {problems[:5]}"
    refused = [c for c in storm.calls if c.status == 503]
    kinds = ("database-unavailable", "too-many-connections", "busy")  # busy: a deadlock between two servers
    assert {c.answer["type"] for c in refused} <= {f"urn:lablease:problem:{kind}" for kind in kinds}, refused[:3]
    assert any(c.answer["type"].endswith("database-unavailable") for c in refused)
    with ThreadPoolExecutor() as pool:  # both wait for the workers: the waits overlap
        checks = [pool.submit(check_reservations, a, storm), pool.submit(check_commands, a, storm, dead_worker,
                                                                           calls_file)]
        for check in checks:
            check.result()
    marks["checked"] = time.time()

    outage = [c for c in storm.calls if down <= c.sent <= max(back.values())]
    print(f"\nchaos (PostgreSQL): {len(storm.calls)} requests ({dict(Counter(c.action for c in storm.calls))}); "
          f"answers {dict(Counter(c.status for c in storm.calls))}; "
          f"{sum(1 for c in storm.calls if c.status is None)} lost with server b's kill; "
          f"PostgreSQL down {up - down:.1f} s, {sum(1 for c in outage if c.status == 503)} refusals (503) meanwhile; "
          f"first write after it was back: " + ", ".join(f"{k} {v - up:.2f} s" for k, v in sorted(back.items()))
          + "; workers' passes working again after " + f"{marks['workers recovered'] - up:.1f} s; timeline: "
          + ", ".join(f"{k} {v - marks['storm']:.1f}" for k, v in marks.items()))


def check_reservations(server: LiveServer, storm: ChaosStorm) -> None:
    """Every acknowledged reservation present; nothing nobody was told about; no overlap; each expiry once."""
    admin = server.api("admin")  # of its own: this runs in a thread beside check_commands
    everything = {r["id"]: r for fqdn in STORMED for r in listed(admin, fqdn)}
    known = {}
    for call in storm.acknowledged():
        now = everything.get(call.answer["id"])
        assert now is not None, f"reservation {call.answer['id']} was lost"
        assert (now["system"], now["start"], now["user"]) == (call.answer["system"], call.answer["start"], call.user)
        known[call.answer["id"]] = now
    # A reserve whose answer was lost (a killed server, a connection dropped at commit) may have been
    # kept: asking again with its request_id tells, as a client retrying would learn.
    for call in storm.calls:
        if call.action == "reserve" and call.status in (None, 503):
            again = server.api(call.user).post("/reservations", json=call.body)
            assert again.status_code in (200, 201, 409, 422), again.text
            if again.status_code in (200, 201):
                known[again.json()["id"]] = again.json()
    everything = {r["id"]: r for fqdn in STORMED for r in listed(admin, fqdn)}  # with those the retries made
    assert set(everything) == set(known), "reservations nobody was told about, or lost ones"
    for fqdn in STORMED:
        booked = [r for r in everything.values() if r["system"] == fqdn and r["start"] != r["end"]]
        assert overlapping_pairs(booked) == [], fqdn

    # Every reservation past its end is returned by a worker, exactly once.
    def all_ended():
        current = {r["id"]: r for fqdn in STORMED for r in listed(admin, fqdn)}
        late = [r for r in current.values() if r["state"] in ("active", "upcoming") and parse(r["end"]).timestamp()
                < time.time() - 1]
        return None if late else current
    final = wait_until("every reservation past its end to be returned", all_ended, timeout=30, step=0.5)
    returned = {c.target for c in storm.acknowledged("return")}
    extended = {}
    for call in storm.acknowledged("extend"):
        extended.setdefault(call.target, []).append(call.answer["end"])
    for ident, reservation in final.items():
        if reservation["state"] not in ("expired", "returned") and ident not in extended:
            continue
        entries = admin.get(f"/reservations/{ident}/activity").json()
        actions = Counter(e["action"] for e in entries)
        if reservation["state"] in ("expired", "returned"):  # ended once, by a worker or by its holder
            assert actions["expired"] + actions["returned"] == 1, (reservation, entries)
            assert actions["expired"] == (reservation["state"] == "expired"), (reservation, entries)
        if ident in returned:
            assert reservation["state"] == "returned", reservation
        ends = {parse(e["new"]) for e in entries if e["action"] == "extended"}
        assert {parse(end) for end in extended.get(ident, [])} <= ends, "an acknowledged extension is missing"


def listed(api, fqdn: str) -> list[dict]:
    response = api.get("/reservations", params={"system": fqdn, "limit": 1000})
    assert response.status_code == 200, response.text
    return response.json()


def check_commands(server: LiveServer, storm: ChaosStorm, dead_worker: int | None, calls_file) -> None:
    """Every acknowledged power command completed (the script always works); with a dead worker's pid, the
    one that worker was running was taken back by a live worker once its lease ran out, and run again."""
    acknowledged = {c.answer["id"] for c in storm.acknowledged("power")}
    admin = server.api("admin")

    def finished():
        commands = {c["id"]: c for fqdn in POWERED for c in admin.get(
            f"/systems/{fqdn}/commands", params={"limit": 1000}).json()}
        return None if any(c["status"] in ("queued", "running") for c in commands.values()) else commands
    commands = wait_until("every command to finish", finished, timeout=45, step=0.5)
    assert acknowledged <= set(commands)
    assert {c["status"] for c in commands.values()} == {"completed"}, [c for c in commands.values()
                                                                       if c["status"] != "completed"]
    if dead_worker is None:  # no worker was killed
        return
    assert any(c["attempts"] >= 2 for c in commands.values()), "the killed worker's command was not run again"
    assert f" {dead_worker}" in calls_file.read_text()


# --- SQLite with its disk full --------------------------------------------------------------------------

@pytest.fixture
def small_disk(tmp_path):
    """A 2 MiB tmpfs for the database, mounted for this test (needs root, or the right to mount)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    result = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)], capture_output=True,
                            text=True)
    if result.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs to fill (mount -t tmpfs: {result.stderr.strip()})")
    yield mount
    subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(directory) -> None:
    """Take every free byte of the file system."""
    fd = os.open(directory / "filler", os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (65536, 512, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError:
                pass
    finally:
        os.close(fd)


def test_sqlite_disk_full_answers_503_loses_nothing_and_resumes(small_disk, tmp_path, sqlite_template):
    database = small_disk / "lablease.db"
    database.write_bytes(sqlite_template.read_bytes())
    server = LiveServer(tmp_path / "data", f"sqlite:///{database}")
    server.data_dir.mkdir()
    server.admin = server.add_user("admin", admin=True)  # the copy of the template is migrated already
    server.start(init=False)
    try:
        response = server.admin.post("/systems", json={"fqdn": "full.lab.test", "arch": "x86_64",
                                                       "condition": "manual"})
        assert response.status_code == 201, response.text
        made = []
        for minute in range(3):
            response = server.admin.post("/reservations", json={"system": "full.lab.test", "start": rfc3339(
                time.time() + 3600 * (minute + 1)), "duration": "30m"})
            assert response.status_code == 201, response.text
            made.append(response.json())
        # Due while the disk is full: the worker cannot return it until space comes back.
        due = server.admin.post("/reservations", json={"system": "full.lab.test", "duration": "3s"})
        assert due.status_code == 201, due.text
        fill(small_disk)
        refused, attempts = None, 0
        while refused is None and attempts < 200:  # SQLite fails once the pages it already has are used up
            attempts += 1
            response = server.admin.post("/reservations", json={"system": "full.lab.test", "start": rfc3339(
                time.time() + 86400 * (attempts + 1)), "duration": "1h"}, timeout=10)
            assert response.status_code in (201, 503), response.text
            if response.status_code == 201:
                made.append(response.json())
            else:
                refused, refused_at = response, time.time()
        assert refused is not None, "the disk never looked full"
        assert refused.headers["Content-Type"] == "application/problem+json"
        assert refused.headers["Retry-After"] == "5"
        assert refused.json()["type"] == "urn:lablease:problem:disk-full" and "disk is full" in refused.json()["detail"]
        assert server.admin.get("/reservations", params={"system": "full.lab.test"}).status_code == 200  # reads work
        wait_until("the worker to meet the full disk", lambda: "worker pass failed (database disk full" in
                   server.read_log(), timeout=20, step=0.2)
        full_for = time.time() - refused_at
        (small_disk / "filler").unlink()  # space returns; nobody restarts anything
        again = server.admin.post("/reservations", json={"system": "full.lab.test", "start": rfc3339(
            time.time() + 86400 * 300), "duration": "1h"}, timeout=10)
        assert again.status_code == 201, again.text
        made.append(again.json())
        expired = wait_until("the worker to return the reservation that fell due", lambda: (
            lambda r: r if r["state"] == "expired" else None)(server.admin.get(f"/reservations/{due.json()['id']}").json()),
            timeout=30, step=0.2)
        assert expired["end"] == due.json()["end"]
        wait_until("the worker to say its passes work again", lambda: "worker passes work again" in server.read_log())
        assert server.process.poll() is None
        kept = {r["id"] for r in listed(server.admin, "full.lab.test")}
        assert {r["id"] for r in made} <= kept, "an acknowledged reservation was lost"
        print(f"\nchaos (SQLite disk full): first refusal (503 disk-full) after {attempts - 1} reserve(s) "
              f"accepted on the full disk; disk full for {full_for:.1f} s; the first reserve after space returned "
              f"accepted; the worker returned the reservation that fell due meanwhile "
              f"{parse(expired['returned_at']).timestamp() - parse(expired['end']).timestamp():.0f} s after its end")
    finally:
        if server.process is not None and server.process.poll() is None:
            server.kill9()  # nothing is left to check: no need to wait for a graceful stop
