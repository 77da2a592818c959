"""The real Beaker client (`bkr`, beaker-client from PyPI in .venv/tools/beaker-client: `make beaker-client`)
run against a live lablease at <server>/bkr, as a Beaker user would configure it.

    bkr = Bkr(server, tmp_path, "alice", "a password")
    result = bkr("system-reserve", "host1.example")   # a CompletedProcess (text), never raises
"""
from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BKR = ROOT / ".venv" / "tools" / "beaker-client" / "bin" / "bkr"


def require_bkr() -> Path:
    if not BKR.exists():
        pytest.fail(f"{BKR} is missing: run `make beaker-client` (make test does)")
    return BKR


class Bkr:
    def __init__(self, server, directory: Path, user: str, password: str | None = None, *,
                 realm: str | None = None, env: dict | None = None):
        """Logs in with `password`; or, given `realm`, with Kerberos (AUTH_METHOD = "krbv", the ticket of the
        credentials cache in `env`) to HTTP/<the server's host>@realm."""
        self.user, self.password = user, password
        self.config = Path(directory) / f"bkr-{user}{'-krbv' if realm else ''}.conf"
        login = (f'AUTH_METHOD = "krbv"\nKRB_REALM = "{realm}"\n' if realm else
                 f'AUTH_METHOD = "password"\nUSERNAME = "{user}"\nPASSWORD = "{password}"\n')
        self.config.write_text(f'HUB_URL = "{server.url}/bkr"\n{login}')
        # Only the config given here: never the machine's /etc/beaker/client.conf or ~/.beaker_client
        self.env = {**(env or os.environ), "BEAKER_CLIENT_CONF": str(self.config), "HOME": str(directory)}

    def __call__(self, *args: str, stdin: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run([str(require_bkr()), *args], env=self.env, capture_output=True, text=True,
                              input=stdin, timeout=timeout)

    def ok(self, *args: str, stdin: str | None = None) -> str:
        """stdout of a command that must succeed (its stderr in the failure message)."""
        result = self(*args, stdin=stdin)
        assert result.returncode == 0, f"bkr {' '.join(args)} exited {result.returncode}: {result.stderr}"
        return result.stdout

    def fails(self, *args: str, stdin: str | None = None) -> str:
        """stderr of a command that must fail, without a traceback."""
        result = self(*args, stdin=stdin)
        assert result.returncode != 0, f"bkr {' '.join(args)} succeeded: {result.stdout}"
        assert "Traceback" not in result.stderr, result.stderr
        return result.stderr
