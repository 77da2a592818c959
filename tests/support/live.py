"""A real `lablease-server serve` process on loopback, for end-to-end tests.

    server = LiveServer(tmp_path, database_url).start()
    server.admin.post("/reservations", json={...})   # requests with the admin's token
    server.stop()
"""
from __future__ import annotations

import atexit
import contextlib
import functools
import io
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from .postgres import free_port

BIN = Path(sys.executable).parent

class Stdin(str):
    """The last item of a command of admin_cli_many: what the command reads on its standard input."""


def run_cli(args, env: dict, stdin: str = "") -> tuple[int, str, str]:
    """`lablease-server ARGS` through the command line's own main(), in this process, with `env`'s LABLEASE_*
    settings: (status, stdout, stderr). A start of Python and lablease costs ~1.7 s of CPU, more than most
    commands, and the suite's servers and fixtures run a few hundred of them; the tests of the command line as
    an administrator types it (its exit statuses, its one-line errors) run the installed `lablease-server`.
    Off the main thread (servers started side by side, as the soak does), in a process of its own: standard
    output is the process's, and another thread's lines would land in the command's."""
    if threading.current_thread() is not threading.main_thread():
        done = subprocess.run([str(BIN / "lablease-server"), *args], env=env, capture_output=True, text=True,
                              timeout=120, input=stdin)
        return done.returncode, done.stdout, done.stderr
    from lablease.cli.server import main

    root = logging.getLogger()
    handlers, level, stdin_was = list(root.handlers), root.level, sys.stdin
    out, err = io.StringIO(), io.StringIO()
    sys.stdin = io.StringIO(stdin or "")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(list(args), environ=env)
            except SystemExit as end:  # argparse's usage errors, a refused password prompt
                if isinstance(end.code, str):
                    print(end.code, file=sys.stderr)
                code = end.code if isinstance(end.code, int) else (0 if end.code is None else 1)
    finally:  # main() gives the root logger one handler of its own, writing to `err`: put back the caller's
        sys.stdin = stdin_was
        root.handlers[:] = handlers
        root.setLevel(level)
    return code, out.getvalue(), err.getvalue()


@functools.cache
def migrated_sqlite() -> Path:
    """A SQLite database `lablease-server init` made (no user in it), once per test process: a server's init
    on a copy finds its schema up to date and skips the migrations (about 1.5 s of CPU a server). Its own
    init still makes the administrator, the site key and the directories."""
    where = Path(tempfile.mkdtemp(prefix="lablease-migrated-"))
    atexit.register(shutil.rmtree, where, True)
    env = {key: value for key, value in os.environ.items() if not key.startswith("LABLEASE_")}
    code, _, err = run_cli(["init"], {**env, "LABLEASE_DATA_DIR": str(where)})
    if code:
        raise RuntimeError(f"lablease-server init failed: {err}")
    return where / "lablease.db"


class Api:
    """requests against /api/v1 with one user's token."""

    def __init__(self, base: str, token: str | None):
        self.base = base
        self.token = token
        self.session = requests.Session()
        # A kept-alive connection the server closes just as a request goes out is reset; retry the
        # idempotent requests (GET, PUT, DELETE, ...) once on a fresh connection, as any client would.
        retry = Retry(total=2, connect=2, read=2, status=0, backoff_factor=0.1)
        self.session.mount("http://", HTTPAdapter(max_retries=retry))
        if token:
            self.session.headers["Authorization"] = f"Bearer {token}"

    def request(self, method: str, path: str, **kwargs) -> requests.Response:
        kwargs.setdefault("timeout", 30)
        return self.session.request(method, self.base + "/api/v1" + path, **kwargs)

    def get(self, path, **kw):
        return self.request("GET", path, **kw)

    def post(self, path, **kw):
        return self.request("POST", path, **kw)

    def patch(self, path, **kw):
        return self.request("PATCH", path, **kw)

    def put(self, path, **kw):
        return self.request("PUT", path, **kw)

    def delete(self, path, **kw):
        return self.request("DELETE", path, **kw)


def _with_stdin(command: tuple[str, ...]) -> list:
    if command and isinstance(command[-1], Stdin):
        return [list(command[:-1]), str(command[-1])]
    return [list(command), ""]


class LiveServer:
    def __init__(self, data_dir: Path, database_url: str = "", settings: dict | None = None,
                 workers: int = 2, threads: int = 4, run_worker: bool = True, serve_args: tuple = (),
                 listen_by_option: bool = False):
        self.data_dir = Path(data_dir)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.env = {**os.environ, "LABLEASE_DATA_DIR": str(self.data_dir), "LABLEASE_LISTEN": f"127.0.0.1:{self.port}"}
        if database_url:
            self.env["LABLEASE_DATABASE_URL"] = database_url
        for key, value in (settings or {}).items():
            self.env[f"LABLEASE_{key.upper()}"] = str(value)
        self.workers, self.threads, self.run_worker = workers, threads, run_worker
        self.serve_args = tuple(serve_args)  # more `lablease-server serve` options, e.g. --access-log
        if listen_by_option:  # the address comes from `serve --listen`; the environment names another one
            self.env["LABLEASE_LISTEN"] = f"127.0.0.1:{free_port()}"
            self.serve_args += ("--listen", f"127.0.0.1:{self.port}")
        self.process: subprocess.Popen | None = None
        self.tokens: dict[str, str] = {}
        self._apis: list[Api] = []

    def admin_cli(self, *args: str, stdin: str | None = None) -> str:
        """Run `lablease-server ARGS` against this server's database (in this process: run_cli); returns stdout."""
        code, out, err = run_cli(args, self.env, stdin or "")
        if code != 0:
            raise RuntimeError(f"lablease-server {' '.join(args)} failed: {err}")
        return out

    def admin_cli_many(self, *commands: tuple[str, ...]) -> list[str]:
        """Several `lablease-server` commands, in order (each as admin_cli): the stdout of each; the first that
        fails raises, naming it. A command's last item may be a Stdin: what it reads on its standard input."""
        outputs = []
        for command in commands:
            args, stdin = _with_stdin(command)
            outputs.append(self.admin_cli(*args, stdin=stdin))
        return outputs

    def add_users(self, *names: str, then: tuple[tuple[str, ...], ...] = ()) -> list[Api]:
        """Users (not administrators, in no group), then the commands of `then`, in one process."""
        outputs = self.admin_cli_many(*(("user", "add", name) for name in names), *then)
        for name, out in zip(names, outputs):
            self.tokens[name] = out.strip()
        return [self.api(name) for name in names]

    def add_user(self, name: str, admin: bool = False, *groups: str) -> Api:
        args = ["user", "add", name] + (["--admin"] if admin else []) + [a for g in groups for a in ("--group", g)]
        self.tokens[name] = self.admin_cli(*args).strip()
        return self.api(name)

    def api(self, name: str | None = None) -> Api:
        api = Api(self.url, self.tokens.get(name) if name else None)
        self._apis.append(api)
        return api

    def close_sessions(self) -> None:
        """Drop the kept-alive connections of every Api handed out (a stopping gunicorn waits for them)."""
        for api in self._apis:
            api.session.close()

    def start(self, init: bool = True) -> LiveServer:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        database = self.data_dir / "lablease.db"
        if init and "LABLEASE_DATABASE_URL" not in self.env and not database.exists():
            shutil.copyfile(migrated_sqlite(), database)
        if init:  # the administrator is made with the database (one process fewer per server)
            made = self.admin_cli("init", *(() if "admin" in self.tokens else ("--admin", "admin")))
            if "admin" not in self.tokens:
                self.tokens["admin"] = made.strip().splitlines()[-1]
                self.admin = self.api("admin")
        self.launch()
        return self

    def launch(self) -> None:
        args = [str(BIN / "lablease-server"), "serve", "--workers", str(self.workers), "--threads", str(self.threads)]
        if not self.run_worker:
            args.append("--no-worker")
        args += self.serve_args
        self._close_log()
        self.log = open(self.data_dir / "server.log", "ab")
        self.process = subprocess.Popen(args, env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
                                        start_new_session=True)
        try:
            self.wait_ready()
        except BaseException:
            self.stop()  # never leave a server behind when it did not come up
            raise

    def wait_ready(self, timeout: float = 30) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}: {self.read_log()[-2000:]}")
            try:
                if requests.get(self.url + "/health", timeout=1).status_code == 200:
                    return
            except (requests.ConnectionError, requests.Timeout):
                pass
            time.sleep(0.1)
        raise RuntimeError("server did not answer /health in time:\n" + self.read_log()[-2000:])

    def read_log(self) -> str:
        return (self.data_dir / "server.log").read_text(errors="replace")

    def kill9(self) -> None:
        """SIGKILL the whole process group (arbiter and workers), as a crash would."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)
        self._close_log()

    def _close_log(self) -> None:
        log = getattr(self, "log", None)
        if log is not None and not log.closed:
            log.close()

    def stop_virtual_machines(self) -> None:
        """Simulated machines run in their own sessions, as real ones would: power them all off."""
        for pid_file in [*self.data_dir.glob("virtual/*/pid"), *self.data_dir.glob("qemu/*/pid")]:
            try:
                os.killpg(int(pid_file.read_text().split()[0]), signal.SIGKILL)
            except (ValueError, IndexError, ProcessLookupError, PermissionError):
                pass

    def stop(self) -> None:
        self.stop_virtual_machines()
        self.close_sessions()
        if self.process is None or self.process.poll() is not None:
            self._close_log()
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
        self._close_log()


class LiveWorker:
    """A real `lablease-server worker` process (beside servers run with `serve --no-worker`)."""

    def __init__(self, env: dict, log_path: Path):
        self.env, self.log_path = env, Path(log_path)
        self.process: subprocess.Popen | None = None

    def launch(self) -> LiveWorker:
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen([str(BIN / "lablease-server"), "worker"], env=self.env, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def read_log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def kill9(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)

    def stop(self) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(15)
        except subprocess.TimeoutExpired:
            self.kill9()
