"""Webhook delivery by a real worker process: checked on the address it connects to, redirects never followed."""
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from lablease.store.db import Database
from lablease.store.tables import Outbox
from lablease.store.uow import UnitOfWork
from tests.support.live import LiveServer


class Hook:
    """A loopback HTTP server recording each request; answers `status`, with `location` for a redirect."""

    def __init__(self, status=200, location=None):
        self.requests = []
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                hook.requests.append(self.path)
                self.send_response(status)
                if location:
                    self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()

            do_GET = do_POST

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def hooks():
    internal = Hook()  # stands for an internal service the redirect points at
    redirecting = Hook(302, location=internal.url.replace("/hook", "/admin"))
    yield redirecting, internal
    redirecting.close()
    internal.close()


def _settled_webhooks(database_url: str, count: int, timeout: float = 30) -> list[tuple[str, str]]:
    """(status, last_error) of the webhook messages, once `count` of them were tried and failed."""
    db = Database(database_url)
    try:
        deadline = time.monotonic() + timeout
        while True:
            with UnitOfWork(db, write=False) as uow:
                rows = [(r.status, r.last_error) for r in uow.session.query(Outbox).filter_by(channel="webhook")
                        .order_by(Outbox.id)]
            if sum(status == "failed" for status, _ in rows) >= count or time.monotonic() > deadline:
                return rows
            time.sleep(0.1)
    finally:
        db.dispose()


def _returned_reservation(server) -> None:
    """Alice's reservation returned by an admin: a reservation.returned notice to her webhook."""
    reservation = server.api("alice").post("/reservations", json={"system": "m1.lab.test", "duration": "1h"}).json()
    assert server.api("admin").delete(f"/reservations/{reservation['id']}").status_code == 204


def test_redirects_are_not_followed_and_a_changed_allowlist_holds_at_send_time(tmp_path, database_url, hooks):
    redirecting, internal = hooks
    server = LiveServer(tmp_path / "data", database_url, settings={
        "webhook_allowed_networks": "127.0.0.1/32", "outbox_max_attempts": 1}).start()
    try:
        server.admin_cli("system", "add", "m1.lab.test", "--arch", "x86_64", "--condition", "manual")
        alice = server.add_user("alice")
        assert alice.patch("/me", json={"webhook_url": redirecting.url}).status_code == 200
        _returned_reservation(server)
        [(status, error)] = _settled_webhooks(database_url, 1)
        assert status == "failed" and "answered 302" in error and "redirects are not followed" in error
        assert redirecting.requests == ["/hook"] and internal.requests == []

        # The site no longer allows loopback: the URL stored earlier is refused when sent, never posted to.
        server.stop()
        del server.env["LABLEASE_WEBHOOK_ALLOWED_NETWORKS"]
        server.launch()
        _returned_reservation(server)
        rows = _settled_webhooks(database_url, 2)
        assert rows[1][0] == "failed" and "refused" in rows[1][1] and "127.0.0.1 is a loopback address" in rows[1][1]
        assert redirecting.requests == ["/hook"] and internal.requests == []
        status = server.api("alice").patch("/me", json={"webhook_url": redirecting.url})
        assert status.status_code == 422 and "loopback" in status.json()["detail"]
    finally:
        server.stop()
