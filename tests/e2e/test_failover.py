"""PostgreSQL failover, end to end: a primary with a synchronous hot standby on loopback, lablease on both.

The pair is started once for the module (tests/support/postgres.py: initdb, pg_basebackup -R, pg_ctl promote);
its databases are made from one migrated template. The failover test runs last: it kills the primary.

- Reads from the standby (`database_read_url`): lists and pages read it, writes and the reads they decide on
  go to the primary (shown by pausing the standby's replay: a list misses what the primary just took).
- A server whose `database_url` names the standby alone answers its writes 503 `database-read-only`.
- Failover: two `serve --no-worker` servers and two workers on the multi-host URL
  (`host=primary&host=standby&target_session_attrs=read-write`) under the chaos storm (tests/support/chaos.py),
  the primary killed -9, the standby promoted: every acknowledged reservation is on the new primary, none
  twice, no overlap; only 503 with Retry-After meanwhile; the first write through each server within 5 s of the
  promotion; both workers' passes and their LISTEN connections on the new primary.
The figures are printed (`pytest -s`), for docs/failure-modes.md.
"""
from __future__ import annotations

import os
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import psycopg
import pytest
import requests

from tests.support.chaos import ChaosStorm, Servers, unexpected, wait_until
from tests.support.live import LiveServer
from tests.support.postgres import ThrowawayPostgres, find_bindir

from .test_chaos import POWERED, STORMED, USERS, check_commands, check_reservations, cluster_on, first_write_after

PROMOTED_WRITE_WITHIN = 5.0  # seconds from `pg_ctl promote` to the first write through each server
SESSION_COOKIE = "lablease_session"  # web/security.py: a page signs in with a token's secret
SITE = {"secret_key": "failover-site-key"}


@dataclass
class Pair:
    primary: ThrowawayPostgres
    standby: ThrowawayPostgres

    def url(self, database: str) -> str:
        """The multi-host URL a site writes in database_url (docs/deployment.md)."""
        return (f"postgresql+psycopg://postgres@/{database}?host=127.0.0.1:{self.primary.port}"
                f"&host=127.0.0.1:{self.standby.port}&target_session_attrs=read-write")

    def sql(self, server: ThrowawayPostgres, query: str, database: str = "postgres"):
        with psycopg.connect(host="127.0.0.1", port=server.port, user="postgres", dbname=database,
                             autocommit=True, connect_timeout=5) as conn:
            return conn.execute(query).fetchall()


@pytest.fixture(scope="module")
def pair():
    if find_bindir() is None:  # as the suite's own PostgreSQL (tests/support/fixtures.py)
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL binaries are missing under CI: `make test` installs them (scripts/ensure-postgresql.sh)")
        pytest.skip("PostgreSQL binaries not installed (run scripts/ensure-postgresql.sh)")
    from lablease.store.db import Database
    from lablease.store.migrate import upgrade

    # Processes die here, not the machine: fsync stays off (FAST); what makes an acknowledged commit survive
    # the primary is the synchronous standby.
    primary = ThrowawayPostgres({"synchronous_commit": "on", "synchronous_standby_names": "*"})
    standby = ThrowawayPostgres()
    try:
        primary.start()
        standby.start_standby(primary)
        found = Pair(primary, standby)
        wait_until("the standby to be synchronous", lambda: found.sql(
            primary, "SELECT 1 FROM pg_stat_replication WHERE sync_state = 'sync'"), timeout=30, step=0.1)
        primary.create_database("lablease_template")
        db = Database(found.url("lablease_template"))
        upgrade(db)
        db.dispose()
        yield found
    finally:
        for server in (standby, primary):  # throwaway: no need for a clean shutdown
            if server.is_up():
                server.kill9()
            server.stop()


def database(pair: Pair, name: str) -> str:
    pair.primary.create_database(name, "lablease_template")
    wait_until(f"the standby to hold {name}", lambda: pair.sql(
        pair.standby, f"SELECT 1 FROM pg_database WHERE datname = '{name}'"), timeout=30, step=0.1)
    return pair.url(name)


def seeded(pair: Pair, name: str, fqdn: str) -> tuple[str, str]:
    """(the URL of) a new database holding the system fqdn and the user admin, and admin's token: made here, in
    this process, as `lablease-server user add` and `system add` would (their processes take seconds each)."""
    from datetime import datetime, timezone

    from lablease.cli.server import SERVER
    from lablease.services.catalog import systems
    from lablease.services.people import users
    from lablease.services.handlers import unit_of_work
    from lablease.store.db import Database
    from lablease.store.secrets import SecretBox, use_secrets
    from lablease.config import Settings

    url = database(pair, name)
    db = Database(url)
    settings = Settings(**SITE)
    use_secrets(db, SecretBox(settings))
    try:
        with unit_of_work(db, settings) as uow:
            _, token = users.add_user(uow, datetime.now(timezone.utc), "admin", True)
            systems.add_system(uow, SERVER, datetime.now(timezone.utc), {"fqdn": fqdn, "arch": "x86_64",
                                                                          "condition": "manual"})
            uow.commit()
    finally:
        db.dispose()
    wait_until(f"the standby to hold {fqdn}", lambda: pair.sql(
        pair.standby, f"SELECT 1 FROM systems WHERE fqdn = '{fqdn}'", name), timeout=10)
    return url, token


def standby_url(pair: Pair, name: str) -> str:
    return f"postgresql+psycopg://postgres@127.0.0.1:{pair.standby.port}/{name}"


def page(server: LiveServer, path: str, token: str) -> requests.Response:
    return requests.get(server.url + path, cookies={SESSION_COOKIE: token}, timeout=10)


@pytest.fixture(scope="module")
def standby_sites(pair, tmp_path_factory):
    """Two servers, started together (each takes seconds), on databases of their own: `reading` with the standby as
    its database_read_url, `misdirected` with the standby alone as its database_url."""
    root = tmp_path_factory.mktemp("sites")
    reading_url, reading_token = seeded(pair, "reads", "r1.lab.test")
    _, misdirected_token = seeded(pair, "misdirected", "m1.lab.test")
    reading = LiveServer(root / "reading", reading_url, {**SITE, "database_read_url": standby_url(pair, "reads")},
                         workers=1, run_worker=False)
    misdirected = LiveServer(root / "misdirected", standby_url(pair, "misdirected"), SITE, workers=1,
                             run_worker=False)
    reading.tokens["admin"], misdirected.tokens["admin"] = reading_token, misdirected_token
    try:
        with ThreadPoolExecutor() as pool:
            list(pool.map(lambda server: server.start(init=False), (reading, misdirected)))
        yield reading, misdirected
    finally:
        for server in (reading, misdirected):  # nothing is left to check: no need to wait for a graceful stop
            if server.process is not None and server.process.poll() is None:
                server.kill9()


def test_lists_and_pages_read_the_standby_writes_go_to_the_primary(pair, standby_sites):
    server, token = standby_sites[0], standby_sites[0].tokens["admin"]
    server.admin = server.api("admin")
    paused = False
    try:
        pair.sql(pair.standby, "SELECT pg_wal_replay_pause()")
        paused = True
        wait_until("the standby's replay to pause", lambda: pair.sql(
            pair.standby, "SELECT 1 WHERE pg_get_wal_replay_pause_state() = 'paused'"), timeout=10)

        # Writes reach the primary (the standby would refuse them: 503), and so do the reads they decide on: the
        # extension finds the reservation the standby has not replayed.
        made = server.admin.post("/reservations", json={"system": "r1.lab.test", "duration": "1h"})
        assert made.status_code == 201, made.text
        ident = made.json()["id"]
        extended = server.admin.patch(f"/reservations/{ident}", json={"extend_by": "30m"})
        assert extended.status_code == 200, extended.text
        assert server.admin.get(f"/reservations/{ident}").status_code == 200  # one item: read where it is written
        # The list and the page are the standby's, which has stopped where the replay paused.
        listed = server.admin.get("/reservations", params={"system": "r1.lab.test"})
        assert listed.status_code == 200 and listed.json() == [], listed.text
        shown = page(server, "/reservations", token)
        assert shown.status_code == 200 and "r1.lab.test" not in shown.text

        pair.sql(pair.standby, "SELECT pg_wal_replay_resume()")
        paused = False
        caught_up = wait_until("the standby to list the reservation", lambda: server.admin.get(
            "/reservations", params={"system": "r1.lab.test"}).json(), timeout=10)
        assert [r["id"] for r in caught_up] == [ident] and caught_up[0]["end"] == extended.json()["end"]
        assert "r1.lab.test" in page(server, "/reservations", token).text
    finally:
        if paused:
            pair.sql(pair.standby, "SELECT pg_wal_replay_resume()")


def test_a_write_sent_to_the_standby_is_503_not_500(standby_sites):
    """database_url naming the standby alone (a mistake, or a failover the URL does not follow)."""
    server = standby_sites[1]
    admin = server.api("admin")
    for method, path, body in (("POST", "/reservations", {"system": "m1.lab.test", "duration": "1h"}),
                               ("POST", "/systems", {"fqdn": "m2.lab.test", "arch": "x86_64",
                                                     "condition": "manual"}),
                               ("PATCH", "/systems/m1.lab.test", {"condition": "broken"})):
        refused = admin.request(method, path, json=body)
        assert refused.status_code == 503, (path, refused.status_code, refused.text)
        assert refused.headers["Content-Type"] == "application/problem+json"
        assert refused.headers["Retry-After"] == "2"
        assert refused.json()["type"] == "urn:lablease:problem:database-read-only", refused.text
        assert "read-only standby" in refused.json()["detail"]
    assert [s["fqdn"] for s in admin.get("/systems").json()] == ["m1.lab.test"]  # reads work, nothing written
    assert admin.get("/systems/m1.lab.test").json()["condition"] == "manual"
    assert "database read-only answering POST /api/v1/reservations" in server.read_log()


def test_backup_reaches_the_primary_of_a_multi_host_url(pair, tmp_path):
    """pg_dump (and pg_restore, through the same code) gets every host of the URL: a multi-host URL rendered back
    as text keeps one, which libpq cannot even resolve ("127.0.0.1:5432")."""
    url, _ = seeded(pair, "dumped", "d1.lab.test")
    archive = tmp_path / "site.tar.gz"
    said = LiveServer(tmp_path / "data", url, SITE).admin_cli("backup", str(archive))  # its command line only
    assert archive.stat().st_size > 0, said


def listeners(pair: Pair, server: ThrowawayPostgres, name: str) -> int:
    """The workers' LISTEN connections on this server (store/wakeup.py)."""
    return pair.sql(server, "SELECT count(*) FROM pg_stat_activity WHERE datname = '" + name +
                    "' AND query = 'LISTEN lablease_wake'")[0][0]


def test_failover_to_the_synchronous_standby(pair, tmp_path):
    """Last in the module: the primary dies here."""
    name = "failover"
    with cluster_on(tmp_path, database(pair, name)) as (a, b, (w1, w2), calls_file):
        wait_until("both workers to listen on the primary", lambda: listeners(pair, pair.primary, name) == 2,
                   timeout=20)
        servers = Servers({"a": a.url, "b": b.url})
        storm = ChaosStorm(servers, {user: a.tokens[user] for user in USERS}, STORMED)
        threads = storm.run(power=(POWERED, a.tokens["admin"]))
        marks = {"storm": time.time()}
        try:
            wait_until("40 reservations", lambda: len(storm.acknowledged()) >= 40)
            acknowledged_before = {c.answer["id"] for c in storm.acknowledged()}
            logged = [len(w.read_log()) for w in (w1, w2)]
            killed = marks["primary killed"] = time.time()
            pair.primary.kill9()
            wait_until("a 503 from each server", lambda: {
                c.server for c in storm.calls if c.status == 503 and c.sent >= killed} == {"a", "b"}, timeout=15)
            for worker, offset in zip((w1, w2), logged):
                wait_until("the worker to meet the outage", lambda: "worker pass failed (database unavailable" in
                           worker.read_log()[offset:], timeout=15)
            refused_page = page(a, "/reservations", a.tokens["ada"])  # a page meets the outage too
            promoted = marks["standby promoted"] = time.time()
            pair.standby.promote()
            marks["promote returned"] = time.time()
            firsts = wait_until("a write through each server", lambda: (
                lambda found: found if set(found) == {"a", "b"} else None)(first_write_after(storm, promoted)),
                timeout=30)
            for worker, offset in zip((w1, w2), logged):
                wait_until("the worker's passes to work again",
                           lambda: "worker passes work again" in worker.read_log()[offset:], timeout=30)
            marks["workers recovered"] = time.time()
            wait_until("both workers to listen on the new primary",
                       lambda: listeners(pair, pair.standby, name) == 2, timeout=30)
            marks["workers listen again"] = time.time()
            settled = len(storm.acknowledged())
            wait_until("10 reservations after the failover", lambda: len(storm.acknowledged()) >= settled + 10)
        finally:
            storm.stop.set()
            for thread in threads:
                thread.join(2 * 10)
        marks["storm over"] = time.time()

        assert refused_page.status_code == 503 and refused_page.headers["Retry-After"].isdigit(), refused_page.text
        problems = unexpected(storm.calls, {})  # no server was killed: every call was answered
        assert not problems, f"{len(problems)} calls broke the rules, e.g. {problems[:5]}"
        refused = [c for c in storm.calls if c.status == 503]
        kinds = ("database-unavailable", "database-read-only", "too-many-connections", "busy")
        assert {c.answer["type"] for c in refused} <= {f"urn:lablease:problem:{kind}" for kind in kinds}, refused[:3]
        late = {server: at - promoted for server, at in firsts.items() if at - promoted > PROMOTED_WRITE_WITHIN}
        assert not late, f"the first write after the promotion took longer than {PROMOTED_WRITE_WITHIN} s: {late}"
        with ThreadPoolExecutor() as pool:  # on the new primary; both wait for the workers: the waits overlap
            checks = [pool.submit(check_reservations, a, storm), pool.submit(check_commands, a, storm, None,
                                                                               calls_file)]
            for check in checks:
                check.result()
        kept = {r["id"] for r in a.admin.get("/reservations", params={"limit": 1000}).json()}
        assert acknowledged_before <= kept, "a reservation acknowledged before the kill is missing"

    during = [c for c in storm.calls if killed <= c.sent <= max(firsts.values())]
    slowest = max((c.answered - c.sent for c in storm.calls), default=0)
    print(f"\nfailover (PostgreSQL, synchronous standby): {len(storm.calls)} requests "
          f"({dict(Counter(c.action for c in storm.calls))}); answers {dict(Counter(c.status for c in storm.calls))}; "
          f"{len(acknowledged_before)} reservations acknowledged before the kill, all on the new primary; "
          f"primary killed -9, promoted {promoted - killed:.1f} s later (pg_ctl promote took "
          f"{marks['promote returned'] - promoted:.1f} s); {sum(1 for c in during if c.status == 503)} refusals (503: "
          f"{dict(Counter(c.answer['type'].rsplit(':', 1)[1] for c in during if c.status == 503))}) meanwhile, "
          f"0 answers 500, slowest answer {slowest:.2f} s; first write after the promotion: "
          + ", ".join(f"{k} {v - promoted:.2f} s" for k, v in sorted(firsts.items()))
          + f"; workers' passes working again {marks['workers recovered'] - promoted:.1f} s after, both LISTENing on "
          f"the new primary {marks['workers listen again'] - promoted:.1f} s after; timeline: "
          + ", ".join(f"{k} {v - marks['storm']:.1f}" for k, v in marks.items()))
