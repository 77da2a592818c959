"""`lablease-server backup` of a busy server and `restore` into a new data directory (or an empty PostgreSQL
database), on SQLite and PostgreSQL: a server started on the restored copy has every reservation that
was acknowledged (201, or 204 for a return) before the backup began, and nothing half-written.

Clients reserve and return systems without pause while the backup runs; the test waits for acknowledgements
before the backup and after it, so the backup is known to have run in the middle of the traffic.
"""
from __future__ import annotations

import threading
import time
import uuid
from dataclasses import dataclass, field

import pytest
import requests
from sqlalchemy import text

from lablease.store.db import Database
from tests.e2e.test_storm import add_systems, rfc3339
from tests.support.live import LiveServer

CLIENTS = 4


@dataclass
class Client:
    """Reserves its own system, returns it, again and again; notes when each answer came."""

    url: str
    token: str
    system: str
    stop: threading.Event
    sent: set = field(default_factory=set)  # request ids sent, answered or not
    reserved: list = field(default_factory=list)  # (acknowledged at, reservation)
    returned: list = field(default_factory=list)  # (acknowledged at, reservation id)
    failures: list = field(default_factory=list)

    def run(self) -> None:
        session = requests.Session()
        session.headers["Authorization"] = f"Bearer {self.token}"
        api = self.url + "/api/v1/reservations"
        hour = int(time.time()) // 3600 * 3600 + 3600
        while not self.stop.is_set():
            request_id = uuid.uuid4().hex
            self.sent.add(request_id)
            hour += 3600  # each in an hour of its own ahead: they never overlap, whichever are returned
            body = {"system": self.system, "start": rfc3339(hour), "end": rfc3339(hour + 1800),
                    "request_id": request_id}
            answer = session.post(api, json=body, timeout=30)
            if answer.status_code != 201:
                self.failures.append((answer.status_code, answer.text))
                return
            self.reserved.append((time.monotonic(), answer.json()))
            if len(self.reserved) % 2 == 0:
                continue  # every other reservation is kept: its booking must come back with it
            gone = session.delete(f"{api}/{answer.json()['id']}", timeout=30)
            if gone.status_code != 204:
                self.failures.append((gone.status_code, gone.text))
                return
            self.returned.append((time.monotonic(), answer.json()["id"]))
        session.close()

    def acknowledged(self) -> int:
        return len(self.reserved)


def wait_for(condition, clients, what: str, timeout: float = 60) -> None:
    """Until each client has what `condition` asks (or one failed: then say why)."""
    deadline = time.monotonic() + timeout
    while not all(condition(c) for c in clients):
        failed = [c.failures for c in clients if c.failures]
        assert not failed and time.monotonic() < deadline, f"waiting for {what}: {failed}"
        time.sleep(0.02)


@pytest.fixture
def restore_url(database_url, request):
    """Where the backup goes back: a new SQLite file (the default in a new data dir), or an empty database."""
    if database_url.startswith("sqlite"):
        return ""
    return request.getfixturevalue("postgres").create_database(f"restored_{uuid.uuid4().hex[:8]}")


def test_a_backup_of_a_busy_server_restores_every_acknowledged_reservation(live_server, restore_url, tmp_path):
    server = live_server
    systems = [f"b{n}.lab.test" for n in range(CLIENTS + 1)]
    add_systems(server, tmp_path, *systems)
    stop = threading.Event()
    clients = [Client(server.url, server.tokens["admin"], system, stop) for system in systems[:CLIENTS]]
    threads = [threading.Thread(target=c.run) for c in clients]
    for thread in threads:
        thread.start()
    try:
        wait_for(lambda c: c.acknowledged() >= 4, clients, "reservations before the backup")
        began = time.monotonic()
        archive = tmp_path / "site.tar.gz"
        said = server.admin_cli("backup", str(archive))
        ended = time.monotonic()
        after = {id(c): c.acknowledged() for c in clients}
        wait_for(lambda c: c.acknowledged() >= after[id(c)] + 2, clients, "reservations after the backup")
    finally:
        stop.set()
        for thread in threads:
            thread.join(60)
    assert "backed up" in said and "site key included" in said, said
    assert archive.stat().st_mode & 0o077 == 0  # it holds the site key
    assert all(c.failures == [] for c in clients)
    during = sum(1 for c in clients for at, _ in c.reserved if began <= at <= ended)

    restored = LiveServer(tmp_path / "restored", restore_url)
    said = restored.admin_cli("restore", str(archive))
    assert "restored the backup" in said, said
    restored.tokens = dict(server.tokens)  # the same users and tokens: they are in the database
    restored.start(init=False)
    try:
        admin = restored.api("admin")
        before = [r for c in clients for at, r in c.reserved if at < began]
        ever_returned = {rid for c in clients for _, rid in c.returned}
        for reservation in before:
            answer = admin.get(f"/reservations/{reservation['id']}")
            assert answer.status_code == 200, (reservation, answer.text)
            got, kept = answer.json(), reservation["id"] not in ever_returned
            assert (got["system"], got["request_id"], got["start"]) == (
                reservation["system"], reservation["request_id"], reservation["start"])
            assert not kept or (got["end"], got["returned_at"]) == (reservation["end"], None), (got, reservation)
        returned_before = {rid for c in clients for at, rid in c.returned if at < began}
        for rid in returned_before:
            assert admin.get(f"/reservations/{rid}").json()["returned_at"] is not None, rid

        listed = admin.get("/reservations").json()
        sent = set().union(*(c.sent for c in clients))
        assert {r["request_id"] for r in listed} <= sent  # nothing that no client asked for
        assert len(listed) >= len(before)
        assert_no_half_written(restored.env.get("LABLEASE_DATABASE_URL")
                               or f"sqlite:///{tmp_path / 'restored' / 'lablease.db'}")
        # The restored site serves: the spare system can be reserved, with an id never given before.
        fresh = admin.post("/reservations", json={"system": systems[-1], "duration": "1h"})
        assert fresh.status_code == 201 and fresh.json()["id"] > max(r["id"] for r in listed), fresh.text
    finally:
        restored.stop()
    print(f"\nbackup under load: {sum(c.acknowledged() for c in clients)} reservations acknowledged, "
          f"{len(before)} before the backup, {during} while it ran, {ended - began:.2f}s for the backup command")


def assert_no_half_written(url: str) -> None:
    """Every open reservation holds its booking on its own system's resource; every booking is whole."""
    db = Database(url)
    try:
        with db.reader.connect() as connection:
            orphans = connection.execute(text(
                "SELECT r.id FROM reservations r JOIN systems s ON s.id = r.system_id "
                "LEFT JOIN bookings b ON b.id = r.booking_id AND b.resource_id = s.resource_id "
                "WHERE r.returned_at IS NULL AND b.id IS NULL")).all()
            holders = connection.execute(text(
                "SELECT count(*) FROM reservations r JOIN systems s ON s.id = r.system_id "
                "WHERE r.returned_at IS NULL")).scalar_one()
    finally:
        db.dispose()
    assert orphans == [] and holders > 0
