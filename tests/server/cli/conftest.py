"""One real server for the package, and `lablease` run in-process against it."""
from __future__ import annotations

import io
from dataclasses import dataclass

import pytest

from lablease.cli.client import main
from tests.support.live import LiveServer


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()


class Cli:
    """Runs `lablease ARGS` as one of the server's users, through main() with injected streams."""

    def __init__(self, server: LiveServer):
        self.server = server

    def env(self, user: str | None = "admin") -> dict:
        env = {"LABLEASE_URL": self.server.url}
        if user:
            env["LABLEASE_TOKEN"] = self.server.tokens[user]
        return env

    def __call__(self, *argv: str, user: str | None = "admin", env: dict | None = None,
                 stdin: str | bytes | None = None) -> Result:
        out, err = io.StringIO(), io.StringIO()
        source = None if stdin is None else io.BytesIO(stdin) if isinstance(stdin, bytes) else io.StringIO(stdin)
        code = main(list(argv), env=self.env(user) if env is None else env, stdout=out, stderr=err, stdin=source)
        return Result(int(code), out.getvalue(), err.getvalue())

    def ok(self, *argv: str, user: str | None = "admin", stdin: str | bytes | None = None) -> Result:
        result = self(*argv, user=user, stdin=stdin)
        assert (result.code, result.err) == (0, ""), result
        return result


@pytest.fixture(scope="package")
def server(tmp_path_factory):
    live = LiveServer(tmp_path_factory.mktemp("d"), run_worker=False).start()
    live.add_user("bob")
    live.add_user("carol", False, "lab-team")
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture(scope="package")
def cli(server) -> Cli:
    return Cli(server)


@pytest.fixture(scope="package")
def add_system(server):
    """Adds a system through the API as admin (each test owns its systems)."""

    def add(fqdn: str, arch: str = "x86_64", **fields) -> str:
        response = server.admin.post("/systems", json={"fqdn": fqdn, "arch": arch, **fields})
        assert response.status_code == 201, response.text
        return fqdn

    return add
