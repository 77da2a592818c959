"""A live lablease (SQLite) with users who log in to its Beaker hub with the real `bkr`.

    def test_x(hub):                      # module-scoped: one server per test file
        hub.bkr("alice").ok("whoami")     # bkr configured with HUB_URL=<server>/bkr, AUTH_METHOD="password"
        hub.api("alice").get("/systems")  # what lablease's own API says afterwards
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.support.bkr import Bkr, require_bkr
from tests.support.live import Api, LiveServer, Stdin

PASSWORD = "a long enough password"


@dataclass
class Hub:
    server: LiveServer
    directory: Path
    clients: dict = field(default_factory=dict)

    def user(self, name: str, admin: bool = False, *groups: str) -> Api:
        """A lablease user with an API token and PASSWORD, who can use both the API and bkr."""
        flags = (*(("--admin",) if admin else ()), *(a for group in groups for a in ("--group", group)))
        self.server.tokens[name] = self.server.admin_cli_many(
            ("user", "add", name, *flags), ("user", "passwd", name, Stdin(PASSWORD + "\n")))[0].strip()
        return self.server.api(name)

    def api(self, name: str = "admin") -> Api:
        return self.server.api(name)

    def bkr(self, name: str, password: str = PASSWORD) -> Bkr:
        if (name, password) not in self.clients:
            self.clients[name, password] = Bkr(self.server, self.directory, name, password)
        return self.clients[name, password]

    def add_system(self, fqdn: str, arch: str = "x86_64", **fields) -> str:
        response = self.server.admin.post("/systems", json={"fqdn": fqdn, "arch": arch, **fields})
        assert response.status_code == 201, response.text
        return fqdn


def start_hub(tmp_path_factory, **live_options):
    """A Hub over a new live server (the caller stops `hub.server`); users alice and bob, admin with a password."""
    require_bkr()
    directory = tmp_path_factory.mktemp("bkr")
    server = LiveServer(directory / "data", **live_options).start()
    hub = Hub(server, directory)
    server.admin_cli("user", "passwd", "admin", stdin=PASSWORD + "\n")
    hub.user("alice")
    hub.user("bob")
    return hub


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    hub = start_hub(tmp_path_factory, run_worker=False)
    try:
        yield hub
    finally:
        hub.server.stop()
