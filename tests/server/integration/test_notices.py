"""Warnings and notices, delivered to a real SMTP server and a real webhook receiver on loopback."""
import hashlib
import hmac
import json
import threading
from datetime import datetime, timedelta, timezone
from email import message_from_bytes
from email import policy as email_policy
from email.utils import parsedate_to_datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from aiosmtpd.controller import Controller

from lablease.config import Settings
from lablease.store.uow import UnitOfWork
from lablease.services.messages import outbox
from lablease.worker.delivery import senders
from lablease.worker.loop import deliver_due, run_due
from tests.support.postgres import free_port

from .conftest import START, Lab

H = timedelta(hours=1)


class Inbox:
    def __init__(self):
        self.messages = []

    async def handle_DATA(self, server, session, envelope):
        self.messages.append(envelope)
        return "250 OK"


@pytest.fixture
def smtp():
    inbox = Inbox()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    yield controller, inbox
    controller.stop()


class Receiver:
    """A webhook receiver: records each POST; answers with the next queued status (default 200)."""

    def __init__(self):
        self.requests, self.statuses = [], []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append((dict(self.headers), body))
                self.send_response(receiver.statuses.pop(0) if receiver.statuses else 200)
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def noticed(db, smtp, tmp_path):
    controller, inbox = smtp
    # the receiver runs on loopback, which webhooks reach only when the site allows it
    settings = Settings(data_dir=str(tmp_path / "data"), smtp_host="127.0.0.1", smtp_port=controller.port,
                        outbox_retry_delay="1m", webhook_allowed_networks=("127.0.0.1/32",))
    lab = Lab(db, settings)
    lab.system()
    return lab, inbox


def deliver(lab, moment):
    return deliver_due(lab.db, moment, lab.settings, senders(lab.settings))


def test_a_warning_arrives_once_by_mail_and_webhook(noticed, receiver):
    lab, inbox = noticed
    lab.alice.patch("/me", {"email": "alice@lab.test", "webhook_url": receiver.url, "webhook_secret": "s3cret"})
    _, r = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "48h"})
    run_due(lab.db, START + 23 * H, lab.settings)
    assert deliver(lab, START + 23 * H) == 0
    run_due(lab.db, START + 24 * H, lab.settings)
    assert deliver(lab, START + 24 * H) == 2
    run_due(lab.db, START + 25 * H, lab.settings)
    assert deliver(lab, START + 25 * H) == 0  # exactly once

    assert len(inbox.messages) == 1
    mail = inbox.messages[0]
    assert mail.rcpt_tos == ["alice@lab.test"]
    text = mail.content.decode()
    assert "Subject: [lablease] s1.lab.test: your reservation ends at 2026-11-24T12:00:00Z" in text
    assert "lablease extend" in text

    assert len(receiver.requests) == 1
    headers, body = receiver.requests[0]
    expected = "sha256=" + hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
    assert headers["X-Lablease-Signature"] == expected
    assert headers["X-Lablease-Event"] == "reservation.ending"
    payload = json.loads(body)
    assert payload["reservation"] == r["id"] and payload["end"] == "2026-11-24T12:00:00Z"


def test_short_reservations_get_the_short_lead_and_an_automatic_return_is_told(noticed):
    lab, inbox = noticed
    lab.alice.patch("/me", {"email": "alice@lab.test"})
    lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "3h"})
    run_due(lab.db, START + 2 * H, lab.settings)
    deliver(lab, START + 2 * H)
    run_due(lab.db, START + 3 * H, lab.settings)
    deliver(lab, START + 3 * H)
    subjects = [m.content.decode().split("Subject: ")[1].split("\n")[0].strip() for m in inbox.messages]
    assert subjects == ["[lablease] s1.lab.test: your reservation ends at 2026-11-22T15:00:00Z",
                        "[lablease] s1.lab.test: your reservation was returned"]
    assert "its end was reached" in inbox.messages[1].content.decode()


def test_an_extension_brings_a_new_warning(noticed):
    lab, inbox = noticed
    lab.alice.patch("/me", {"email": "alice@lab.test"})
    _, r = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "3h"})
    run_due(lab.db, START + 2 * H, lab.settings)
    lab.clock.advance(hours=2)
    lab.alice.patch(f"/reservations/{r['id']}", {"extend_by": "2h"})
    run_due(lab.db, START + 4 * H, lab.settings)
    deliver(lab, START + 4 * H)
    assert len(inbox.messages) == 2


def test_failed_webhooks_are_retried_with_backoff(noticed, receiver):
    lab, _ = noticed
    lab.alice.post("/groups", {"name": "qe"})
    lab.alice.patch("/groups/qe", {"webhook_url": receiver.url})
    receiver.statuses = [500, 503]
    lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "3h"})
    run_due(lab.db, START + 2 * H, lab.settings)
    assert deliver(lab, START + 2 * H) == 0
    assert deliver(lab, START + 2 * H + timedelta(seconds=59)) == 0  # not yet: backoff 1m
    assert deliver(lab, START + 2 * H + timedelta(minutes=1)) == 0  # second failure: next in 2m
    assert deliver(lab, START + 2 * H + timedelta(minutes=2)) == 0
    assert deliver(lab, START + 2 * H + timedelta(minutes=3)) == 1
    assert len(receiver.requests) == 3
    assert len({h["X-Lablease-Delivery"] for h, _ in receiver.requests}) == 1  # the same delivery id each time
    with UnitOfWork(lab.db, write=False) as uow:
        [sent] = outbox.listing(uow)
    assert sent["status"] == "sent" and sent["attempts"] == 3


def test_delivery_interrupted_by_a_crash_is_not_lost(noticed):
    lab, inbox = noticed
    lab.alice.patch("/me", {"email": "alice@lab.test"})
    lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "3h"})
    run_due(lab.db, START + 2 * H, lab.settings)
    with UnitOfWork(lab.db, settings=lab.settings) as uow:
        [ident] = outbox.due_ids(uow, START + 2 * H)
        assert outbox.claim(uow, ident, START + 2 * H) is not None  # claimed, then the worker "dies"
        uow.commit()
    assert deliver(lab, START + 2 * H) == 0
    with UnitOfWork(lab.db) as uow:
        assert outbox.recover_interrupted(uow) == 1
        uow.commit()
    assert deliver(lab, START + 2 * H) == 1 and len(inbox.messages) == 1


def test_loan_warning_and_return_notice(noticed):
    lab, inbox = noticed
    lab.alice.patch("/me", {"email": "alice@lab.test"})
    lab.admin.post("/systems/s1.lab.test/loan", {"recipient": "alice", "duration": "3d"})
    run_due(lab.db, START + 48 * H, lab.settings)
    run_due(lab.db, START + 72 * H, lab.settings)
    deliver(lab, START + 72 * H)
    texts = [m.content.decode() for m in inbox.messages]
    assert len(texts) == 2
    assert "your loan ends at 2026-11-25T12:00:00Z" in texts[0] and "your loan was returned" in texts[1]


def test_mails_carry_a_date_and_a_unique_message_id(noticed):
    lab, inbox = noticed
    lab.alice.patch("/me", {"email": "alice@lab.test"})
    lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "3h"})
    before = datetime.now(timezone.utc).replace(microsecond=0)
    for hours in (2, 3):  # the warning, then the automatic return
        run_due(lab.db, START + hours * H, lab.settings)
        deliver(lab, START + hours * H)
    after = datetime.now(timezone.utc)
    mails = [message_from_bytes(m.content, policy=email_policy.default) for m in inbox.messages]
    assert len(mails) == 2
    for mail in mails:
        sent = parsedate_to_datetime(mail["Date"])  # RFC 5322 date, sent at delivery time
        assert sent.tzinfo is not None and before <= sent <= after
        assert mail["Message-ID"].startswith("<lablease-") and mail["Message-ID"].endswith(">")
    assert mails[0]["Message-ID"] != mails[1]["Message-ID"]


def test_a_retried_mail_keeps_its_message_id(db):
    """Delivery is at least once: a receiver recognises a repeat by its Message-ID."""

    class RefusesFirst(Inbox):
        async def handle_DATA(self, server, session, envelope):
            self.messages.append(envelope)
            return "451 try again later" if len(self.messages) == 1 else "250 OK"

    inbox = RefusesFirst()
    controller = Controller(inbox, hostname="127.0.0.1", port=free_port())
    controller.start()
    try:
        lab = Lab(db, Settings(smtp_host="127.0.0.1", smtp_port=controller.port, outbox_retry_delay="1m"))
        lab.system()
        lab.alice.patch("/me", {"email": "alice@lab.test"})
        lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "3h"})
        run_due(lab.db, START + 2 * H, lab.settings)
        assert deliver(lab, START + 2 * H) == 0  # refused once
        assert deliver(lab, START + 3 * H) == 1  # retried
    finally:
        controller.stop()
    ids = [message_from_bytes(e.content, policy=email_policy.default)["Message-ID"] for e in inbox.messages]
    assert len(ids) == 2 and ids[0] == ids[1]
