"""`lablease-server serve`: gunicorn, plus one background worker process.

The API runs in gunicorn's worker processes. The background worker runs as
one child process of the arbiter, started once the arbiter is ready and
stopped when it exits: exactly one however many processes serve requests.
It is a process, not a thread of the arbiter, because the arbiter forks
request workers at any time, and a fork copies a thread's held locks
(SQLite, SQLAlchemy's mapper registry) into a child that can never
release them.

Slow clients: gunicorn's default worker class here is `gevent`. A gthread
worker gives a connection one of its few threads as soon as a byte arrives and
keeps it while the client trickles its headers, so a dozen slow clients starve
everybody else; gevent gives every connection a greenlet of its own, so only
complete requests compete for the application (docs/design.md, "Serving").
"""
from __future__ import annotations

import gc
import logging
import math
import os
import signal
import subprocess
import sys

from gunicorn.app.base import BaseApplication
from gunicorn.glogging import Logger

from ..config import Settings
from ..observe import logs, metrics
from ..observe.logs import without_query  # noqa: F401 - where tests and callers have found it

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
                 config_file: str | None = None):
        self.settings = settings
        self.run_worker = run_worker
        self.access_log = access_log
        self.config_file = config_file
        self.worker: subprocess.Popen | None = None
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
        }
        for key, value in options.items():
            self.cfg.set(key, value)

    def _when_ready(self, _arbiter):
        if self.run_worker:
            command = [sys.executable, "-m", "lablease.cli.server"]
            if self.config_file:
                command += ["--config", self.config_file]
            command += ["worker", "--parent", str(os.getpid())]
            self.worker = subprocess.Popen(command, env=worker_environ(self.settings))
        log.info("lablease serving on http://%s (worker %s)", self.settings.listen,
                 f"process {self.worker.pid}" if self.worker else "off")

    def _on_exit(self, _arbiter):
        if self.worker is not None and self.worker.poll() is None:
            self.worker.send_signal(signal.SIGTERM)
            try:
                self.worker.wait(10)
            except subprocess.TimeoutExpired:
                self.worker.kill()
                self.worker.wait()
        if self.worker is not None:
            metrics.mark_dead(self.worker.pid)

    def load(self):
        from ..api import create_app  # built in each worker process after the fork

        app = create_app(self.settings)
        gc.collect()  # the application lives as long as the process: out of the collector's way (cli/server.py)
        gc.freeze()
        return app


def worker_environ(settings: Settings, environ=os.environ) -> dict:
    """The background worker's environment: the serving process's own address and public URL.

    The worker loads its settings afresh (file and environment), which know nothing of
    `serve --listen`; without these it would write kickstart and netboot URLs naming
    another address than the one the API answers on.
    """
    return {**environ, "LABLEASE_LISTEN": settings.listen, "LABLEASE_PUBLIC_URL": settings.base_url}


def serve(settings: Settings, run_worker: bool = True, access_log: str | None = None,
          config_file: str | None = None) -> None:
    # Before anything forks: every process started from here (API workers, the worker) counts into it.
    metrics.prepare(settings.data_dir)
    LabLeaseServer(settings, run_worker, access_log, config_file).run()
