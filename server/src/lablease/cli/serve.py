"""`lablease-server serve`: gunicorn, plus one background worker process.

The API runs in gunicorn's worker processes. The background worker runs as
one child process of the arbiter, started once the arbiter is ready and
stopped when it exits: exactly one however many processes serve requests.
It is a process, not a thread of the arbiter, because the arbiter forks
request workers at any time, and a fork copies a thread's held locks
(SQLite, SQLAlchemy's mapper registry) into a child that can never
release them. It is forked from the arbiter as the request workers are
(before any of them, and again on a reload), then runs `lablease-server
worker --parent PID` as that command's own main(): the modules the arbiter
has loaded are shared rather than imported again by a fresh interpreter
(about 1.5 s of CPU and 60 MB a start). Its process name is
`lablease-worker` (`ps -o pid,comm`); its command line is the arbiter's.

Slow clients: gunicorn's default worker class here is `gevent`. A gthread
worker gives a connection one of its few threads as soon as a byte arrives and
keeps it while the client trickles its headers, so a dozen slow clients starve
everybody else; gevent gives every connection a greenlet of its own, so only
complete requests compete for the application (docs/design.md, "Serving").

Reload (SIGHUP, `systemctl reload`): gunicorn's own. The arbiter keeps the listening socket, starts new
request workers, then stops the old ones gracefully: they stop accepting, finish what they were
answering (a waiting long poll answers at once, an event stream ends) and exit, so no accepted
connection is reset. The background worker is replaced too. Each new process checks the schema first:
on a database a newer lablease migrated it refuses to start and the server exits (status 3), rather
than writing to a schema it does not know (docs/deployment.md, "Reload and restart").
"""
from __future__ import annotations

import ctypes
import fcntl
import gc
import logging
import math
import os
import signal
import sys
import time
import traceback
from pathlib import Path

from gunicorn.app.base import BaseApplication
from gunicorn.arbiter import Arbiter
from gunicorn.glogging import Logger

from ..config import Settings
from ..observe import logs, metrics
from ..observe.logs import without_query  # noqa: F401 - where tests and callers have found it
from ..store import migrate
from ..store.db import Database
from ..store.feed_signal import stop_waiting
from ..store.wakeup import AlreadyRunning, WakeListener

log = logging.getLogger("lablease.serve")


class ServerLog(Logger):
    """gunicorn's logger, writing the site's line format (`log_format`) and never a secret.

    gunicorn writes the request line of a request it cannot parse, and the URI
    of one whose handling raised; both would carry an installer's token: the
    redacting filter (observe/logs.py) takes queries, tokens and passwords out.
    The access log is one event per request with the request id the
    application answered in X-Request-Id, and the path without its query.
    """

    log_format = "keyvalue"

    def setup(self, cfg):
        super().setup(cfg)
        for handler in self.error_log.handlers + self.access_log.handlers:
            logs.dress(handler, self.log_format)

    def access(self, resp, req, environ, request_time):
        if not self.access_log_enabled:
            return
        headers = dict((name.lower(), value) for name, value in resp.headers)
        status = int(str(resp.status).split(None, 1)[0])
        self.access_log.info("request", extra={
            "remote": environ.get("REMOTE_ADDR", "-"), "method": environ.get("REQUEST_METHOD"),
            "path": environ.get("PATH_INFO"), "status": status, "bytes": getattr(resp, "sent", None),
            "duration_ms": round(request_time.total_seconds() * 1000, 1),
            "request_id": headers.get("x-request-id", "-")})


class LabLeaseServer(BaseApplication):
    def __init__(self, settings: Settings, run_worker: bool = True, access_log: str | None = None,
                 config_file: str | None = None, lock=None):
        self.settings = settings
        self.lock = lock  # claim_data_dir's
        self.run_worker = run_worker
        self.access_log = access_log
        self.config_file = config_file
        self.worker: Forked | None = None
        self.arbiter: Arbiter | None = None
        super().__init__()

    def load_config(self):
        ServerLog.log_format = self.settings.log_format
        binds = [self.settings.listen] + ([self.settings.metrics_listen] if self.settings.metrics_listen else [])
        options = {
            "bind": binds,
            "workers": self.settings.gunicorn_workers,
            "worker_class": self.settings.gunicorn_worker_class,
            "threads": self.settings.gunicorn_threads,  # gthread only
            "timeout": 60,
            "graceful_timeout": 10,
            # gevent: also how long a client has to send a request's headers before it is hung up on.
            # Not a usual poll interval: a client polling at the keep-alive sends just as the server closes
            # (docs/deployment.md, "Keep-alive").
            "keepalive": math.ceil(self.settings.gunicorn_keepalive.total_seconds()),
            "accesslog": self.access_log,
            "logger_class": ServerLog,
            "loglevel": self.settings.log_level,
            "proc_name": "lablease-server",
            "control_socket_disable": True,  # several servers may run on one host
            "when_ready": self._when_ready,
            "child_exit": lambda _arbiter, child: metrics.mark_dead(child.pid),
            "on_exit": self._on_exit,
            "post_fork": self._post_fork,
            "on_reload": self._on_reload,
        }
        for key, value in options.items():
            self.cfg.set(key, value)

    def _when_ready(self, arbiter):
        self.arbiter = arbiter
        self._start_worker()
        log.info("lablease serving on http://%s (worker %s)", self.settings.listen,
                 f"process {self.worker.pid}" if self.worker else "off")

    def _start_worker(self) -> None:
        if self.run_worker:
            argv = (["--config", self.config_file] if self.config_file else []) + ["worker", "--parent", str(os.getpid())]
            pid = os.fork()
            if pid == 0:
                self._be_the_worker(argv)
            self.worker = Forked(pid)

    def _be_the_worker(self, argv: list[str]) -> None:
        """In the forked child: drop what is the arbiter's (its signal handlers, listening sockets, the data
        directory's lock), then run the worker command; never return into gunicorn."""
        code = 1
        try:
            for number in [*Arbiter.SIGNALS, signal.SIGCHLD]:
                signal.signal(number, signal.SIG_DFL)
            for listener in self.arbiter.LISTENERS if self.arbiter else ():
                listener.close()
            if self.lock is not None:
                self.lock.close()
            os.environ.update(worker_environ(self.settings))
            _name_process(b"lablease-worker")
            from .server import main

            code = main(argv)
        except SystemExit as end:
            code = end.code if isinstance(end.code, int) else 1
        except BaseException:  # noqa: BLE001 - said, and the process ends with 1 (never back into the arbiter)
            traceback.print_exc()
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)

    def _on_reload(self, _arbiter):
        # Called before the new request workers start: the background worker finishes its pass and a new
        # one (a fresh interpreter, which checks the schema as it starts) takes over.
        if self.worker is not None:
            self._stop_worker()
            self._start_worker()
            log.info("reload: worker process %s replaced the previous one", self.worker.pid)

    def _post_fork(self, _arbiter, worker):
        # The data directory's lock is the serving process's: a request worker that outlives it for a moment
        # must not keep the next `serve` out (the lock stays held by the arbiter's own descriptor).
        if self.lock is not None:
            self.lock.close()
        worker.handle_exit = _ending_waits(worker.handle_exit)

    def _on_exit(self, _arbiter):
        self._stop_worker()

    def _stop_worker(self) -> None:
        if self.worker is not None and self.worker.running:
            self.worker.send_signal(signal.SIGTERM)
            if not self.worker.wait(10):
                self.worker.send_signal(signal.SIGKILL)
                self.worker.wait(10)
        if self.worker is not None:
            metrics.mark_dead(self.worker.pid)

    def load(self):
        from ..api import create_app  # built in each worker process after the fork

        refuse_unknown_schema(self.settings)
        app = create_app(self.settings)
        gc.collect()  # the application lives as long as the process: out of the collector's way (cli/server.py)
        gc.freeze()
        return app


class Forked:
    """The forked background worker, as the arbiter sees it. gunicorn's SIGCHLD handler reaps every child of the
    arbiter, this one too: a child already reaped has ended."""

    def __init__(self, pid: int):
        self.pid = pid
        self.ended = False

    @property
    def running(self) -> bool:
        if not self.ended:
            try:
                self.ended = os.waitpid(self.pid, os.WNOHANG)[0] == self.pid
            except ChildProcessError:
                self.ended = True
        return not self.ended

    def send_signal(self, number: int) -> None:
        if self.running:
            os.kill(self.pid, number)

    def wait(self, timeout: float) -> bool:
        """Whether it ended within timeout seconds."""
        deadline = time.monotonic() + timeout
        while self.running and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.ended


def _name_process(name: bytes) -> None:
    """The name `ps -o comm`, top and /proc/PID/comm show (Linux's prctl PR_SET_NAME; elsewhere left alone)."""
    try:
        ctypes.CDLL(None, use_errno=True).prctl(15, ctypes.c_char_p(name[:15]), 0, 0, 0)
    except (OSError, AttributeError):
        pass


def _ending_waits(handle_exit):
    """gunicorn's SIGTERM handler of a request worker (a reload, a stop), ending the feed's waits first.

    gunicorn waits `graceful_timeout` for the requests in flight, then cuts them off; a long poll may wait
    five minutes. Told to stop waiting, it answers what it has within a second instead (store/feed_signal.py).
    """
    def handle(sig, frame):
        stop_waiting()
        handle_exit(sig, frame)

    return handle


def refuse_unknown_schema(settings: Settings) -> None:
    """A request worker starting (at start-up, after a reload, or replacing one that died) serves only the
    schema this code knows: on any other it exits with gunicorn's boot-error status, which stops the whole
    server, naming the revision and what to do, instead of writing to a schema a newer lablease migrated."""
    from .server import Unusable, _db

    try:
        _db(settings).dispose()
    except (migrate.SchemaNewer, Unusable) as error:
        log.error("refusing to serve: %s", error)
        sys.exit(Arbiter.WORKER_BOOT_ERROR)  # the arbiter then stops, with this status


def worker_environ(settings: Settings, environ=os.environ) -> dict:
    """The background worker's environment: the serving process's own address and public URL.

    The worker loads its settings afresh (file and environment), which know nothing of
    `serve --listen`; without these it would write kickstart and netboot URLs naming
    another address than the one the API answers on.
    """
    return {**environ, "LABLEASE_LISTEN": settings.listen, "LABLEASE_PUBLIC_URL": settings.base_url}


def claim_data_dir(settings: Settings):
    """One `serve` per data directory: its metrics, netboot files and keys are this server's. The lock is held for
    the life of the serving process; a second `serve` is refused at once, in one line, as a second worker is
    (rather than serving beside the first with no worker after one warning)."""
    path = Path(settings.data_dir)
    path.mkdir(parents=True, exist_ok=True)
    lock = open(path / "serve.lock", "a+")  # noqa: SIM115 - held open until the process ends
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        lock.seek(0)
        holder = lock.read().strip()
        lock.close()
        raise AlreadyRunning(f"another lablease-server serve already runs on data directory {path}"
                             + (f" (process {holder})" if holder.isdigit() else "")
                             + ": stop it first, or give this one a data directory of its own "
                               "(LABLEASE_DATA_DIR)") from None
    lock.truncate(0)
    lock.write(str(os.getpid()))
    lock.flush()
    return lock


def claim_worker(settings: Settings) -> None:
    """SQLite has one worker: refuse to serve with a worker when another already runs for the database (the
    worker would only be refused after the server had started, which then served without one)."""
    db = Database(settings.database)
    try:
        if not db.is_postgresql:
            try:
                WakeListener(db).close()
            except AlreadyRunning as error:
                raise AlreadyRunning(f"{error}: stop it first, or serve beside it with --no-worker") from None
    finally:
        db.dispose()


def serve(settings: Settings, run_worker: bool = True, access_log: str | None = None,
          config_file: str | None = None) -> None:
    lock = claim_data_dir(settings)  # held as long as this process runs
    if run_worker:
        claim_worker(settings)
    # Before anything forks: every process started from here (API workers, the worker) counts into it.
    metrics.prepare(settings.data_dir)
    # What the applications share (not an application: each request worker builds its own) is built once,
    # here: every process forked from here inherits it instead of building it again (~0.7 s of CPU each).
    from ..api.app import preload

    preload()
    LabLeaseServer(settings, run_worker, access_log, config_file, lock).run()
