"""One bad item never stops the worker: a real server and worker, poisoned rows planted straight into the
database (bypassing the API), and everything else still flows — also after a restart."""
import json
import re
import subprocess
from datetime import datetime, timedelta, timezone

import pytest
from aiosmtpd.controller import Controller
from sqlalchemy import create_engine, text

from lablease.store.db import Database
from tests.server.integration.test_notices import Inbox
from tests.support.live import BIN, LiveServer
from tests.support.postgres import free_port
from tests.support.poison import poison_updates
from tests.support.postgres import free_port

from .test_provisioning_e2e import TREE, add_virtual, wait_for

EVIL = "\nchain http://127.0.0.1:9/evil"


@pytest.fixture
def mailbox():
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    yield controller.port, inbox
    controller.stop()


@pytest.fixture
def server(tmp_path, database_url, mailbox):
    live = LiveServer(tmp_path / "data", database_url, run_worker=False, settings={
        "smtp_host": "127.0.0.1", "smtp_port": mailbox[0], "outbox_max_attempts": 2, "outbox_retry_delay": "1s",
        "command_retry_delay": "1s", "worker_max_sleep": "1s"}).start()
    live.database_url = database_url
    yield live
    live.stop()


def set_up(server):
    """Through the API, with no worker running: work of every kind, some of it to be poisoned."""
    # Two kinds of systems: m1-m6 for the holds, a1, a2 and b1 for the recipes (one command-line process).
    systems = [(f"m{n}", "manual") for n in range(1, 7)] + [(fqdn, "automated") for fqdn in ("a1", "a2", "b1")]
    admin, (alice,) = server.admin, server.add_users("alice", then=tuple(
        ("system", "add", f"{fqdn}.lab.test", "--arch", "x86_64", "--condition", condition)
        for fqdn, condition in systems))
    assert alice.patch("/me", json={"email": "alice@lab.test"}).status_code == 200
    add_virtual(server, "p1.lab.test", "52:54:00:e2:f0:01")
    add_virtual(server, "q1.lab.test", "52:54:00:e2:f0:02")
    assert admin.post("/distro-trees", json=TREE).status_code == 201
    alice.post("/reservations", json={"system": "p1.lab.test", "duration": "8h"})
    install = alice.post("/systems/p1.lab.test/provision", json={"distro_tree": "Fedora-40"}).json()
    power_on = admin.post("/systems/q1.lab.test/power", json={"action": "on"}).json()
    items = {"install": install["id"], "power_on": power_on["id"]}
    for name, fqdn in (("bad_reservation", "m1"), ("good_reservation", "m2")):
        items[name] = alice.post("/reservations", json={"system": f"{fqdn}.lab.test", "duration": "8h"}).json()["id"]
    for name, fqdn in (("bad_loan", "m3"), ("good_loan", "m4")):
        items[name] = admin.post(f"/systems/{fqdn}.lab.test/loan", json={"recipient": "alice", "duration": "8h"}
                                 ).json()["id"]
    start = (datetime.now(timezone.utc) + timedelta(hours=1)).isoformat(timespec="seconds")
    for name, fqdn in (("bad_ar", "m5"), ("good_ar", "m6")):
        response = admin.post("/advance-reservations", json={"hosts": [f"{fqdn}.lab.test"], "start": start,
                                                            "duration": "1h"})
        assert response.status_code == 201, response.text
        items[name] = response.json()["id"]
    # Recipes: two running (past their runtime limit, once planted), two waiting for a tree (to vanish).
    admin.post("/reservations", json={"system": "b1.lab.test", "duration": "8h"})  # the tree's recipes wait
    on = {fqdn: {"field": "hostname", "op": "=", "value": f"{fqdn}.lab.test"} for fqdn in ("a1", "a2", "b1")}
    wants = {"field": "distro_name", "op": "=", "value": "Fedora-40"}
    for name, recipe in (("bad_overdue", {"host_requires": on["a1"], "runtime_limit": 3600}),
                         ("good_overdue", {"host_requires": on["a2"], "runtime_limit": 3600}),
                         ("bad_repair", {"host_requires": on["b1"], "distro_requires": wants}),
                         ("good_repair", {"host_requires": on["b1"], "distro_requires": wants})):
        response = alice.post("/jobs", json={"recipe_sets": [{"recipes": [recipe]}]})
        assert response.status_code == 201, response.text
        items[name] = response.json()["recipe_sets"][0]["recipes"][0]["id"]
    return items


def plant(server, items) -> int:
    """Bad rows, written straight into the database; everything set up is made due now."""
    database = Database(server.database_url)  # the server's own connection settings (SQLite: foreign keys on)
    engine = database.writer
    past = datetime.now(timezone.utc) - timedelta(seconds=1)
    with engine.begin() as db:
        # The case: a kernel command line with a newline, which the netboot writer refuses.
        distro = db.execute(text("SELECT distro FROM installations WHERE id = :i"), {"i": items["install"]}).scalar()
        distro = distro if isinstance(distro, dict) else json.loads(distro)
        distro["boot_options"] += EVIL
        db.execute(text("UPDATE installations SET distro = :d WHERE id = :i"),
                   {"d": json.dumps(distro), "i": items["install"]})
        # A mail address with a header in it: the mail library refuses to build the message.
        db.execute(text("INSERT INTO outbox (channel, destination, subject, payload, dedupe_key, status, attempts,"
                        " next_attempt_at, created_at) VALUES ('mail', :d, 'poison', '{}', 'poison', 'pending', 0,"
                        " :t, :t)"), {"d": "carol@lab.test\nBcc: everybody@evil.test", "t": past})
        bad_notice = db.execute(text("SELECT id FROM outbox WHERE dedupe_key = 'poison'")).scalar()
        for name in ("bad_reservation", "good_reservation"):
            db.execute(text("UPDATE reservations SET due_at = :t WHERE id = :i"), {"t": past, "i": items[name]})
        for name in ("bad_loan", "good_loan"):
            db.execute(text("UPDATE loans SET end_at = :t WHERE id = :i"), {"t": past, "i": items[name]})
        for name in ("bad_ar", "good_ar"):
            db.execute(text("UPDATE advance_reservations SET start_at = :t, due_at = :t WHERE id = :i"),
                       {"t": past, "i": items[name]})
        for name in ("bad_overdue", "good_overdue"):
            db.execute(text("UPDATE recipes SET watchdog_at = :t WHERE id = :i"), {"t": past, "i": items[name]})
        db.execute(text("DELETE FROM distro_trees"))  # behind the server's back: the repair pass finds out
    for table, name in (("reservations", "bad_reservation"), ("loans", "bad_loan"),
                        ("advance_reservations", "bad_ar"), ("recipes", "bad_overdue"), ("recipes", "bad_repair")):
        poison_updates(engine, table, items[name])
    database.dispose()
    return bad_notice


def outbox_row(server, ident):
    engine = create_engine(server.database_url)
    with engine.connect() as db:
        row = db.execute(text("SELECT status, attempts, last_error FROM outbox WHERE id = :i"), {"i": ident}).one()
    engine.dispose()
    return row


def failures_logged(server, kind, ident) -> int:
    return len(re.findall(rf"\b{kind} {ident} failed: ", server.read_log()))


def test_poisoned_items_are_failed_once_and_everything_else_flows(server, mailbox):
    _, inbox = mailbox
    items = set_up(server)
    server.stop()
    bad_notice = plant(server, items)
    server.run_worker = True
    server.launch()
    admin, alice = server.api("admin"), server.api("alice")

    # Another system's command runs; the poisoned one fails for good, with the usual consequences.
    wait_for("q1's power command", lambda: admin.get(f"/commands/{items['power_on']}").json()["status"] == "completed")
    install = wait_for("the poisoned installation to fail", lambda: (
        lambda i: i if i["status"] == "failed" else None)(alice.get(f"/installations/{items['install']}").json()))
    assert "control character" in install["error"]
    commands = {c["action"]: c for c in alice.get("/systems/p1.lab.test/commands").json()}
    poisoned = commands["netboot_install"]
    assert poisoned["status"] == "failed" and "control character" in poisoned["error"]
    assert commands["reboot"]["status"] == "failed"
    # Expiries and transitions happen for the good items; the poisoned ones are parked with their error.
    wait_for("the good reservation's expiry", lambda: alice.get(
        f"/reservations/{items['good_reservation']}").json()["state"] == "expired")
    assert alice.get(f"/reservations/{items['bad_reservation']}").json()["state"] == "active"
    parked = alice.get(f"/reservations/{items['bad_reservation']}/activity").json()
    assert any(e["action"] == "worker_failed" and "poisoned row" in e["new"] for e in parked)
    wait_for("the good loan's expiry", lambda: admin.get("/systems/m4.lab.test/loan").status_code == 404)
    assert admin.get("/systems/m3.lab.test/loan").status_code == 200
    wait_for("the good AR to start",
             lambda: admin.get(f"/advance-reservations/{items['good_ar']}").json()["state"] == "r")
    assert admin.get(f"/advance-reservations/{items['bad_ar']}").json()["state"] == "w"
    for good, bad, left in (("good_overdue", "bad_overdue", "running"), ("good_repair", "bad_repair", "queued")):
        wait_for(f"{good} aborted", lambda: alice.get(f"/recipes/{items[good]}").json()["status"] == "aborted")
        assert alice.get(f"/recipes/{items[bad]}").json()["status"] == left
    # Notices: the good ones are delivered (the failed installation, the returned reservation); the poisoned
    # one fails after its retries.
    wait_for("the poisoned notice to fail", lambda: outbox_row(server, bad_notice)[0] == "failed")
    assert outbox_row(server, bad_notice)[1] == 2
    wait_for("alice's notices", lambda: sum("alice@lab.test" in m.rcpt_tos for m in inbox.messages) >= 2)
    assert not any("everybody@evil.test" in m.rcpt_tos for m in inbox.messages)
    assert admin.get("/health").status_code == 200 and admin.get("/systems/q1.lab.test").status_code == 200

    # After a restart the poisoned items are not tried again, and new work still flows.
    server.stop()
    server.launch()
    alice = server.api("alice")
    mails_before = len(inbox.messages)
    again = alice.post("/reservations", json={"system": "m2.lab.test", "duration": "2s"}).json()
    wait_for("a new reservation's expiry and its notice", lambda: alice.get(
        f"/reservations/{again['id']}").json()["state"] == "expired" and len(inbox.messages) > mails_before)
    for kind, ident in (("reservation_expiry", items["bad_reservation"]), ("loan_expiry", items["bad_loan"]),
                        ("ar_transition", items["bad_ar"]), ("command", poisoned["id"]),
                        ("recipe_watchdog", items["bad_overdue"]), ("recipe_repair", items["bad_repair"])):
        assert failures_logged(server, kind, ident) == 1, (kind, ident)
    assert outbox_row(server, bad_notice)[1] == 2


def test_a_second_worker_on_one_sqlite_database_says_why_in_one_line(tmp_path):
    live = LiveServer(tmp_path / "data").start()  # SQLite, with its worker
    try:
        wait_for("the first worker", lambda: "worker started" in live.read_log())
        second = subprocess.run([str(BIN / "lablease-server"), "worker"], env=live.env, capture_output=True,
                                text=True, timeout=60)
        assert second.returncode != 0
        assert second.stderr == \
            "lablease-server: another lablease worker already runs for this SQLite database\n"
        assert live.admin.get("/health").status_code == 200
    finally:
        live.stop()


def test_a_second_serve_on_one_data_directory_is_refused_in_one_line(tmp_path):
    """It used to serve beside the first with no worker after one warning in its log; now it is refused at once,
    as a second worker is, with or without a worker of its own."""
    live = LiveServer(tmp_path / "data").start()  # SQLite, with its worker
    try:
        wait_for("the first worker", lambda: "worker started" in live.read_log())
        for extra in ((), ("--no-worker",)):
            second = subprocess.run([str(BIN / "lablease-server"), "serve", "--listen", f"127.0.0.1:{free_port()}",
                                     *extra], env=live.env, capture_output=True, text=True, timeout=60)
            assert second.returncode != 0, extra
            assert second.stderr == (f"lablease-server: another lablease-server serve already runs on data directory "
                                     f"{live.data_dir} (process {live.process.pid}): stop it first, or give this one "
                                     "a data directory of its own (LABLEASE_DATA_DIR)\n"), (extra, second.stderr)
        # another data directory on the same SQLite database: refused with a worker, served without one
        other = {**live.env, "LABLEASE_DATA_DIR": str(tmp_path / "other"),
                 "LABLEASE_DATABASE_URL": f"sqlite:///{(tmp_path / 'data' / 'lablease.db').resolve()}"}
        second = subprocess.run([str(BIN / "lablease-server"), "serve", "--listen", f"127.0.0.1:{free_port()}"],
                                env=other, capture_output=True, text=True, timeout=60)
        assert second.returncode != 0 and second.stderr == (
            "lablease-server: another lablease worker already runs for this SQLite database: stop it first, or "
            "serve beside it with --no-worker\n"), second.stderr
        assert live.admin.get("/health").status_code == 200
    finally:
        live.stop()
