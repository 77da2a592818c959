"""A health check failing on a real simulated machine (docs/health.md): the worker submits the check, the
scheduler places it, the machine netboots and its installer fails; the system becomes broken with the check's
outcome as the reason, and its owner's webhook receives the notice from the real worker."""
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.e2e.test_provisioning_e2e import TREE, add_virtual, wait_for
from tests.support.live import LiveServer


class Receiver:
    """A loopback webhook endpoint keeping the JSON bodies it receives."""

    def __init__(self):
        self.bodies = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                receiver.bodies.append(json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0))))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver():
    found = Receiver()
    yield found
    found.close()


def test_a_failing_health_check_breaks_a_simulated_machine_and_its_owner_is_told(tmp_path, database_url, receiver):
    server = LiveServer(tmp_path / "data", database_url, settings={
        "install_timeout": "60s", "command_retry_delay": "1s", "webhook_allowed_networks": "127.0.0.1/32"}).start()
    try:
        alice = server.add_user("alice")
        assert alice.patch("/me", json={"webhook_url": receiver.url}).status_code == 200
        add_virtual(server, "hc.lab.test", "52:54:00:e2:e0:18", condition="automated")
        server.admin.patch("/systems/hc.lab.test", json={"owner": "alice", "power": {
            "driver": "virtual", "boot_delay": 0.1, "install_delay": 0.2, "fail_install": True}})
        assert server.admin.post("/distro-trees", json=TREE).status_code == 201
        check = server.admin.post("/health-checks", json={"name": "install-smoke", "system": "hc.lab.test", "job": {
            "recipe_sets": [{"recipes": [{"distro_requires": {"field": "distro_name", "op": "=",
                                                              "value": "Fedora-40"}}]}]}})
        assert check.status_code == 201, check.text
        assert server.admin.post("/systems/hc.lab.test/health-check").status_code == 202

        broken = wait_for("the check to break the system", lambda: (
            lambda s: s if s["condition"] == "broken" else None)(server.admin.get("/systems/hc.lab.test").json()))
        assert broken["health"]["state"] == "bad" and broken["health"]["check"] == "install-smoke"
        assert broken["health"]["result"].startswith("health check install-smoke aborted: ")
        assert "install_fail" in broken["health"]["result"]
        console = (server.data_dir / "virtual" / "hc.lab.test" / "console.log").read_text()
        assert "installation failed" in console  # the machine really booted the check's installer
        [told] = wait_for("the owner's webhook", lambda: [b for b in receiver.bodies
                                                           if b.get("event") == "system.health_failed"])
        assert told["user"] == "alice" and told["system"] == "hc.lab.test" and told["condition"] == "broken"
        assert told["reason"] == broken["health"]["result"]
    finally:
        server.stop()
