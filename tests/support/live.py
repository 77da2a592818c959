"""A real `lablease-server serve` process on loopback, for end-to-end tests.

    server = LiveServer(tmp_path, database_url).start()
    server.admin.post("/reservations", json={...})   # requests with the admin's token
    server.stop()
"""
from __future__ import annotations

import atexit
import functools
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests
from requests.adapters import HTTPAdapter
from urllib3.util.retry import Retry

from .postgres import free_port

BIN = Path(sys.executable).parent

class Stdin(str):
    """The last item of a command of admin_cli_many: what the command reads on its standard input."""


# admin_cli_many's process: [[[args...], stdin], ...] on stdin; [[status, stdout, stderr], ...] on stdout, to the first
# command that fails.
_MANY = """
import contextlib, io, json, sys
from lablease.cli.server import main
results = []
for args, stdin in json.load(sys.stdin):
    out, err = io.StringIO(), io.StringIO()
    sys.stdin = io.StringIO(stdin)
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    results.append([code, out.getvalue(), err.getvalue()])
    if code:
        break
json.dump(results, sys.__stdout__)
"""


@functools.cache
def migrated_sqlite() -> Path:
    """A SQLite database `lablease-server init` made (no user in it), once per test process: a server's init
    on a copy finds its schema up to date and skips the migrations (about 1.5 s of CPU a server). Its own
    init still makes the administrator, the site key and the directories."""
    where = Path(tempfile.mkdtemp(prefix="lablease-migrated-"))
    atexit.register(shutil.rmtree, where, True)
    env = {key: value for key, value in os.environ.items() if not key.startswith("LABLEASE_")}
    subprocess.run([str(BIN / "lablease-server"), "init"], env={**env, "LABLEASE_DATA_DIR": str(where)},
                   check=True, capture_output=True, timeout=120)
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
        """Run `lablease-server ARGS` against this server's database; returns stdout."""
        result = subprocess.run([str(BIN / "lablease-server"), *args], env=self.env, capture_output=True,
                                text=True, timeout=60, input=stdin)
        if result.returncode != 0:
            raise RuntimeError(f"lablease-server {' '.join(args)} failed: {result.stderr}")
        return result.stdout

    def admin_cli_many(self, *commands: tuple[str, ...]) -> list[str]:
        """Several `lablease-server` commands, in order, in one process (each through the command line's own
        main(), as if run alone): the stdout of each. A start of Python and lablease costs more CPU than most
        commands, and fixtures run several; the first that fails raises, naming it."""
        result = subprocess.run([sys.executable, "-c", _MANY], env=self.env, capture_output=True, text=True,
                                timeout=120, input=json.dumps([_with_stdin(command) for command in commands]))
        if result.returncode != 0:
            raise RuntimeError(f"lablease-server commands failed: {result.stderr}")
        outputs = []
        for command, (code, out, err) in zip(commands, json.loads(result.stdout)):
            if code != 0:
                raise RuntimeError(f"lablease-server {' '.join(_with_stdin(command)[0])} failed: {err}")
            outputs.append(out)
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
