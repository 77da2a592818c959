"""Loans and notices end to end: a real server process, a real SMTP server and webhook receiver."""
import time

import pytest
from aiosmtpd.controller import Controller
from sqlalchemy import select

from lablease.store.tables import Outbox
from lablease.store.uow import UnitOfWork

from tests.server.integration.test_notices import Inbox, Receiver
from tests.support.live import LiveServer
from tests.support.postgres import free_port


@pytest.fixture
def mailbox():
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    yield controller.port, inbox
    controller.stop()


@pytest.fixture
def hook():
    receiver = Receiver()
    yield receiver
    receiver.close()


@pytest.fixture
def server(tmp_path, database_url, mailbox):
    port, _ = mailbox
    live = LiveServer(tmp_path / "data", database_url, settings={
        "smtp_host": "127.0.0.1", "smtp_port": port, "warn_before": "6s", "warn_before_short": "3s",
        "webhook_allowed_networks": "127.0.0.1/32"}).start()  # the webhook receiver is on loopback
    live.admin_cli("system", "add", "m1.lab.test", "--arch", "x86_64", "--condition", "manual")
    live.admin_cli("system", "add", "a1.lab.test", "--arch", "x86_64", "--condition", "automated")
    yield live
    live.stop()


def test_the_loan_story(server):
    admin, alice = server.admin, server.add_user("alice")
    loan = admin.post("/systems/m1.lab.test/loan", json={"recipient": "alice", "duration": "1h"}).json()
    reservation = alice.post("/reservations", json={"system": "m1.lab.test", "return_loan": True}).json()
    assert reservation["end"] == loan["end"]  # capped at, and defaulting to, the loan's end

    refused = alice.patch(f"/reservations/{reservation['id']}", json={"extend_by": "1h"})
    assert refused.status_code == 422 and "past the end of your loan" in refused.json()["detail"]
    extended = admin.patch("/systems/m1.lab.test/loan", json={"extend_by": "1h"})
    assert extended.status_code == 200
    assert alice.patch(f"/reservations/{reservation['id']}", json={"extend_by": "1h"}).status_code == 200

    assert alice.delete(f"/reservations/{reservation['id']}").status_code == 204
    assert alice.get("/systems/m1.lab.test/loan").status_code == 404  # returned with the reservation

    admin.post("/systems/a1.lab.test/loan", json={"recipient": "alice"})
    on_automated = alice.post("/reservations", json={"system": "a1.lab.test", "duration": "4h"}).json()
    assert admin.delete("/systems/a1.lab.test/loan").status_code == 204  # taken back
    after = alice.get(f"/reservations/{on_automated['id']}").json()
    assert after["state"] == "returned"
    log = alice.get(f"/reservations/{on_automated['id']}/activity").json()
    assert any(entry["action"] == "loan_ended" for entry in log)


def test_a_warning_arrives_once_by_mail_and_webhook(server, mailbox, hook, db):
    _, inbox = mailbox
    alice = server.add_user("alice")
    alice.patch("/me", json={"email": "alice@lab.test", "webhook_url": hook.url, "webhook_secret": "k"})
    reservation = alice.post("/reservations", json={"system": "m1.lab.test", "duration": "8s"}).json()
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and (len(inbox.messages) < 2 or len(hook.requests) < 2):
        time.sleep(0.2)  # the worker delivers each notice by mail, then by webhook
    subjects = [m.content.decode().split("Subject: ")[1].split("\n")[0].strip() for m in inbox.messages]
    assert subjects == [f"[lablease] m1.lab.test: your reservation ends at {reservation['end']}",
                        "[lablease] m1.lab.test: your reservation was returned"]
    events = [headers["X-Lablease-Event"] for headers, _ in hook.requests]
    assert events == ["reservation.ending", "reservation.returned"]
    # Nothing more is on its way: the outbox holds one row per notice and channel, each marked sent
    # (after its delivery), and the returned reservation is never warned about again.
    assert wait_until_delivered(db) == [("mail", "reservation.ending"), ("webhook", "reservation.ending"),
                                        ("mail", "reservation.returned"), ("webhook", "reservation.returned")]
    assert alice.get(f"/reservations/{reservation['id']}").json()["state"] == "expired"
    assert len(inbox.messages) == 2 and len(hook.requests) == 2  # once each


def wait_until_delivered(db, timeout=20.0) -> list[tuple[str, str]]:
    """(channel, event) of every outbox message, once none is left to send (pending or sending)."""
    deadline = time.monotonic() + timeout
    while True:
        with UnitOfWork(db, write=False) as uow:
            rows = uow.session.execute(select(Outbox).order_by(Outbox.id)).scalars().all()
            unsent = [(row.channel, row.status) for row in rows if row.status != "sent"]
            sent = [(row.channel, row.payload.get("event")) for row in rows]
        if not unsent:
            return sent
        assert time.monotonic() < deadline, f"still not delivered after {timeout} s: {unsent}"
        time.sleep(0.1)
