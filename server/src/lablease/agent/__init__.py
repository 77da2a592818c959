"""`lablease-agent`: one lab's power commands and netboot files, run inside the lab (docs/lab-agents.md).

It connects out to the server (no port into the lab is needed for it), takes its lab's commands
with a long poll (`POST /api/v1/agent/take`), carries each out exactly as the worker does
(worker/commands.py `attempt`: the same power drivers, the same atomic netboot writer, into its own
TFTP root) and reports each attempt's outcome. The queue's rules stay the server's: what it takes is
leased, and if the agent dies the lease runs out and the command is retried. With `agent_listen`
set it also passes the lab's installers' kickstart and callback requests on to the server (proxy.py).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import ssl
import stat
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

from .. import __version__
from ..config import Settings, load_settings
from ..domain.errors import DomainError
from ..observe import logs
from ..provision.netboot import BootImage
from ..services.provisioning.commands import Claimed

log = logging.getLogger("lablease.agent")
POLL_WAIT = 30  # seconds one long poll may wait (the server caps it at half its agent_silence_limit)
USAGE, REFUSED = 2, 1


class Refused(Exception):
    """The server said no (a 4xx): a wrong or revoked token, a lab that is not there. Retrying will not help."""


def token_path(settings: Settings) -> Path:
    return Path(settings.agent_token_file) if settings.agent_token_file else Path(settings.data_dir) / "agent.token"


def read_token(path: Path) -> str:
    """The agent token; refused while anybody but its own user may read the file (it acts for the lab)."""
    try:
        mode = path.stat().st_mode
        text = path.read_text(encoding="utf-8").strip()
    except OSError as error:
        raise Refused(f"cannot read the agent token {path}: {error.strerror or error} "
                      "(lablease-agent save-token < TOKEN)") from None
    if stat.S_IMODE(mode) & 0o077:
        raise Refused(f"the agent token {path} is readable by others (mode {stat.S_IMODE(mode):04o}): "
                      f"chmod 600 {path}")
    if not text:
        raise Refused(f"the agent token file {path} is empty")
    return text


def save_token(path: Path, secret: str) -> None:
    """Write the token readable by this user only (0600), atomically: never a moment with other modes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".agent-token.")  # mkstemp: mode 0600
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            out.write(secret.strip() + "\n")
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


class Server:
    """The agent's calls to the server: JSON over HTTP(S) with the agent token."""

    def __init__(self, url: str, token: str, ca_file: str = ""):
        self.url, self.token = url.rstrip("/"), token
        self.context = ssl.create_default_context(cafile=ca_file or None) if url.startswith("https:") else None

    def post(self, path: str, body: dict, timeout: float) -> dict:
        request = urllib.request.Request(self.url + "/api/v1" + path, data=json.dumps(body).encode(), method="POST",
                                         headers={"Authorization": f"Bearer {self.token}",
                                                  "Content-Type": "application/json", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=timeout, context=self.context) as answer:
                return json.loads(answer.read() or b"{}")
        except urllib.error.HTTPError as error:
            detail = _detail(error)
            if 400 <= error.code < 500:
                raise Refused(f"{error.code}: {detail}") from None
            raise OSError(f"server answered {error.code}: {detail}") from None


def _detail(error: urllib.error.HTTPError) -> str:
    try:
        return json.loads(error.read()).get("detail") or error.reason
    except (ValueError, AttributeError, OSError):
        return str(error.reason)


def claimed_from(command: dict, lab: str) -> Claimed:
    """The server's description of one command as the worker's own runner takes it."""
    boot = command.get("boot")
    return Claimed(command["id"], command["action"], command["fqdn"], lab, dict(command.get("power") or {}),
                   command.get("mac"), BootImage(**boot) if boot else None,
                   tuple(command["loaders"]) if command.get("loaders") else None, command["attempt"])


class Agent:
    def __init__(self, settings: Settings, server: Server):
        self.settings, self.server = settings, server
        self.lab = settings.agent_lab
        self.slots = threading.Semaphore(max(1, settings.command_workers))
        self.pool = ThreadPoolExecutor(max(1, settings.command_workers), thread_name_prefix="lablease-agent")
        self.stopping = threading.Event()

    def run(self) -> None:
        """Take and carry out commands until stopped; a refusal (bad token) ends it, an outage is waited out."""
        pause = 1.0
        while not self.stopping.is_set():
            self.slots.acquire()
            free = 1
            while free < self.settings.command_workers and self.slots.acquire(blocking=False):
                free += 1
            try:
                answer = self.server.post("/agent/take", {"limit": free, "wait": POLL_WAIT, "version": __version__},
                                          timeout=POLL_WAIT + 30)
                pause = 1.0
            except (OSError, ValueError) as error:  # the server is away: try again, more slowly
                self._release(free)
                log.warning("cannot reach the server (%s); trying again in %.0f s", error, pause)
                self.stopping.wait(pause)
                pause = min(pause * 2, 30.0)
                continue
            except BaseException:
                self._release(free)
                raise
            if answer.get("lab") != self.lab:
                self._release(free)
                raise Refused(f"this agent's token is lab {answer.get('lab')}'s, not {self.lab}'s (agent_lab)")
            commands = answer.get("commands") or []
            self._release(free - len(commands))
            for command in commands:
                self.pool.submit(self._carry_out, command)

    def _release(self, count: int) -> None:
        for _ in range(count):
            self.slots.release()

    def _carry_out(self, command: dict) -> None:
        from ..worker.commands import attempt  # the worker's own runner: the same drivers, the same writer

        try:
            settings = replace(self.settings, command_timeout=timedelta(seconds=command.get("timeout") or 120))
            error, state = attempt(claimed_from(command, self.lab), settings)
            outcome = {"attempt": command["attempt"], "outcome": "failed" if error else "completed"}
            if error:
                outcome["error"] = error[:4000]
            elif state:
                outcome["state"] = state
            self._report(command, outcome)
        finally:
            self.slots.release()

    def _report(self, command: dict, outcome: dict) -> None:
        """Tell the server, retrying while it is away for as long as the command's lease lasts (after that the
        server has taken the command back anyway)."""
        deadline = time.monotonic() + (command.get("timeout") or 120)
        pause = 0.5
        while True:
            try:
                self.server.post(f"/agent/commands/{command['id']}/report", outcome, timeout=30)
                log.info("command %s (%s %s): %s", command["id"], command["action"], command["fqdn"],
                         outcome["outcome"])
                return
            except Refused as refused:  # e.g. taken back after its lease ran out: the retry tells
                log.warning("command %s: outcome not taken: %s", command["id"], refused)
                return
            except (OSError, ValueError) as error:
                if time.monotonic() + pause >= deadline:
                    log.warning("command %s: outcome not reported (%s); the server retries it", command["id"], error)
                    return
                time.sleep(pause)
                pause = min(pause * 2, 8.0)


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lablease-agent", description="Run one lab's power and netboot commands "
                                     "for a lablease server (docs/lab-agents.md)")
    parser.add_argument("--config", help="settings file (default: $LABLEASE_CONFIG)")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("run", help="take and run the lab's commands (the default)")
    sub.add_parser("save-token", help="store the agent token read from stdin in agent_token_file (mode 0600)")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        settings = load_settings(args.config)
    except DomainError as error:
        print(f"lablease-agent: {error.detail}", file=sys.stderr)
        return USAGE
    logs.configure(settings.log_format, settings.log_level)
    try:
        if args.command == "save-token":
            save_token(token_path(settings), sys.stdin.read())
            print(f"agent token saved in {token_path(settings)}", file=sys.stderr)
            return 0
        return run(settings)
    except Refused as error:
        print(f"lablease-agent: {error}", file=sys.stderr)
        return REFUSED


def run(settings: Settings) -> int:
    missing = [name for name in ("agent_server_url", "agent_lab") if not getattr(settings, name)]
    if missing:
        raise Refused(f"set {' and '.join(missing)} (file or LABLEASE_{missing[0].upper()})")
    server = Server(settings.agent_server_url, read_token(token_path(settings)), settings.agent_ca_file)
    agent = Agent(settings, server)
    proxy = None
    if settings.agent_listen:
        from .proxy import start

        proxy = start(settings.agent_listen, server)
    signal.signal(signal.SIGTERM, lambda *_: (agent.stopping.set(), sys.exit(0)))
    log.info("lablease-agent %s for lab %s, server %s", __version__, settings.agent_lab, settings.agent_server_url)
    try:
        agent.run()
    finally:
        if proxy is not None:
            proxy.shutdown()
    return 0
