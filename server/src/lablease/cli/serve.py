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

import logging
import os
import re
import signal
import subprocess
import sys

from gunicorn.app.base import BaseApplication
from gunicorn.glogging import Logger

from ..config import Settings

log = logging.getLogger("lablease.serve")

_QUERY = re.compile(r"\?[^\s'\"]*")


def without_query(text: str) -> str:
    """text with every URL query removed: installers' URLs carry their token in ?token=."""
    return _QUERY.sub("?[query removed]", text)


def _redact(record: logging.LogRecord) -> bool:
    record.msg, record.args = without_query(record.getMessage()), None
    return True


class ServerLog(Logger):
    """gunicorn's logger whose error log never writes a query string.

    gunicorn writes the request line of a request it cannot parse, and the URI
    of one whose handling raised; both would carry an installer's token.
    """

    def setup(self, cfg):
        super().setup(cfg)
        self.error_log.addFilter(_redact)


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
        options = {
            "bind": self.settings.listen,
            "workers": self.settings.gunicorn_workers,
            "worker_class": self.settings.gunicorn_worker_class,
            "threads": self.settings.gunicorn_threads,  # gthread only
            "timeout": 60,
            "graceful_timeout": 10,
            # gevent: also how long a client has to send a request's headers before it is hung up on
            "keepalive": 2,
            "accesslog": self.access_log,
            # The path without its query: installers' URLs carry their token in ?token=.
            "access_log_format": '%(h)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s %(M)sms',
            "logger_class": ServerLog,
            "loglevel": self.settings.log_level,
            "proc_name": "lablease-server",
            "control_socket_disable": True,  # several servers may run on one host
            "when_ready": self._when_ready,
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

    def load(self):
        from ..api import create_app  # built in each worker process after the fork

        return create_app(self.settings)


def worker_environ(settings: Settings, environ=os.environ) -> dict:
    """The background worker's environment: the serving process's own address and public URL.

    The worker loads its settings afresh (file and environment), which know nothing of
    `serve --listen`; without these it would write kickstart and netboot URLs naming
    another address than the one the API answers on.
    """
    return {**environ, "LABLEASE_LISTEN": settings.listen, "LABLEASE_PUBLIC_URL": settings.base_url}


def serve(settings: Settings, run_worker: bool = True, access_log: str | None = None,
          config_file: str | None = None) -> None:
    LabLeaseServer(settings, run_worker, access_log, config_file).run()
