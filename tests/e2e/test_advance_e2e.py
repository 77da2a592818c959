"""Advance reservations end to end: a real server and worker, the API and the `lablease` CLI.

An AR for two systems in the near future: unlimited outside work cannot land there, limited work
backfills before it; the worker starts it on time; bound work runs only on its systems; a system
breaks (E, soft: the rest stays usable); the end aborts bound work and frees the systems.
"""
from __future__ import annotations

import json
import time
from datetime import datetime, timedelta, timezone
from importlib.resources import files

import pytest
from lxml import etree

from tests.server.cli.conftest import Cli
from tests.support.live import LiveServer

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def server(tmp_path):
    live = LiveServer(tmp_path / "data", settings={"max_advance_reservations": 2, "ar_duration_offset": "2s"}).start()
    try:
        live.alice = live.add_user("alice")
        live.bob = live.add_user("bob")
        live.admin.post("/groups/arusers/members", json={"user": "alice"}).raise_for_status()
        for name, memory in (("s1", 2048), ("s2", 2048), ("s3", 8192)):
            live.admin.post("/systems", json={"fqdn": f"{name}.lab.test", "arch": "x86_64", "memory_mb": memory,
                                              "condition": "automated"}).raise_for_status()
        yield live
    finally:
        live.stop()


def utc(seconds: float) -> str:
    moment = datetime.now(timezone.utc) + timedelta(seconds=seconds)
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


def parse(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def wait_for(what, check, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def recipe_of(job: dict) -> dict:
    return job["recipe_sets"][0]["recipes"][0]


def test_an_advance_reservation_from_qrsub_to_its_end(server, tmp_path):
    cli = Cli(server)
    # only admins and arusers may create one
    refused = cli("ar", "create", "-a", utc(8), "-d", "0:0:30", "-pe", "any", "2", user="bob")
    assert refused.code == 4, refused
    created = cli("ar", "create", "-N", "e2e", "-a", utc(8), "-d", "0:0:30", "-pe", "any", "2",
                  "-l", "memory<=4096", "-u", "alice,bob", "--json", user="alice")
    assert created.code == 0, created
    ar = json.loads(created.out)
    assert ar["state"] == "w" and ar["systems"] == ["s1.lab.test", "s2.lab.test"]
    # the limit: two active at most (max_advance_reservations: 2); the CLI exits 25 past it, as qrsub does
    second = cli("ar", "create", "-N", "later", "-a", utc(86400), "-d", "1:00:00", user="alice")
    assert second.code == 0, second
    over = cli("ar", "create", "-a", utc(86400), "-d", "1:00:00", user="alice")
    assert over.code == 25 and "max_advance_reservations" in over.err, over
    assert cli("ar", "delete", "later", user="alice").code == 0  # qrdel by name

    # outside work: unlimited cannot land on the AR's systems, limited work ending before it backfills
    unlimited = server.bob.post("/jobs", json={"recipe_sets": [{"recipes": [{}]}]}).json()
    assert recipe_of(unlimited)["system"] == "s3.lab.test"
    waiting = server.bob.post("/jobs", json={"recipe_sets": [{"recipes": [{}]}]}).json()
    assert recipe_of(waiting)["status"] == "queued"
    short = server.bob.post("/jobs", json={"recipe_sets": [{"recipes": [{"runtime_limit": 3}]}]}).json()
    assert recipe_of(short)["status"] == "running" and recipe_of(short)["system"] in ar["systems"]

    # work bound to the AR (through the CLI) waits for its start, then runs only on its systems
    job_file = tmp_path / "bound.json"
    job_file.write_text(json.dumps({"recipe_sets": [{"recipes": [{"runtime_limit": 20}, {"runtime_limit": 20}]}]}))
    submitted = cli("job", "submit", str(job_file), "--ar", str(ar["id"]), "--json", user="bob")
    assert submitted.code == 0, submitted
    bound = json.loads(submitted.out)
    assert [r["status"] for r in bound["recipe_sets"][0]["recipes"]] == ["queued", "queued"]
    running = wait_for("the AR to start", lambda: (lambda a: a if a["state"] == "r" else None)(
        server.alice.get(f"/advance-reservations/{ar['id']}").json()))
    assert datetime.now(timezone.utc) - parse(running["start"]) < timedelta(seconds=6)  # on time (<= 5 s late)
    placed = wait_for("the bound recipes to run", lambda: (lambda j: j if all(
        r["status"] == "running" for r in j["recipe_sets"][0]["recipes"]) else None)(
        server.bob.get(f"/jobs/{bound['id']}").json()))
    assert sorted(r["system"] for r in placed["recipe_sets"][0]["recipes"]) == ar["systems"]

    # a system breaks: E; soft error handling keeps the other one usable for new bound work
    server.admin.patch("/systems/s2.lab.test", json={"condition": "broken"}).raise_for_status()
    shown = cli("ar", "show", str(ar["id"]), "--explain", user="alice")
    assert shown.code == 0 and "s2.lab.test is broken" in shown.out, shown
    first = next(r for r in placed["recipe_sets"][0]["recipes"] if r["system"] == "s1.lab.test")
    server.bob.patch(f"/recipes/{first['id']}", json={"status": "completed", "result": "pass"}).raise_for_status()
    more = server.bob.post("/jobs", json={"recipe_sets": [{"ar": ar["id"], "recipes": [{"runtime_limit": 15}]}]})
    assert more.status_code == 201, more.text
    assert recipe_of(more.json())["system"] == "s1.lab.test" and recipe_of(more.json())["status"] == "running"

    # qrstat's XML validates against its schema
    listed = cli("ar", "list", "-u", "*", "--xml", user="alice")
    schema = etree.XMLSchema(etree.parse(str(files("lablease.cli") / "qrstat.xsd")))
    document = etree.fromstring(listed.out.encode())
    assert schema.validate(document), schema.error_log
    assert document.findtext(".//state") == "E"

    # the end: bound work is aborted, the AR exits, its systems take outside work again
    wait_for("the AR to end", lambda: server.alice.get(f"/advance-reservations/{ar['id']}").json()["state"] == "x",
             timeout=60)
    statuses = {r["status"] for r in server.bob.get(f"/jobs/{more.json()['id']}").json()["recipe_sets"][0]["recipes"]}
    assert statuses <= {"aborted", "completed"}
    assert wait_for("the waiting outside recipe to start", lambda: (lambda r: r["system"] if r["status"] == "running"
                    else None)(server.bob.get(f"/recipes/{recipe_of(waiting)['id']}").json())) == "s1.lab.test"
