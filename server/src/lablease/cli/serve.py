"""`lablease-server serve`: gunicorn with threaded workers, plus one background worker process.

The API runs in gunicorn's worker processes. The background worker runs as
one child process of the arbiter, started once the arbiter is ready and
stopped when it exits: exactly one however many processes serve requests.
It is a process, not a thread of the arbiter, because the arbiter forks
request workers at any time, and a fork copies a thread's held locks
(SQLite, SQLAlchemy's mapper registry) into a child that can never
release them.
"""
from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys

from gunicorn.app.base import BaseApplication

from ..config import Settings

log = logging.getLogger("lablease.serve")


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
            "worker_class": "gthread",
            "threads": self.settings.gunicorn_threads,
            "timeout": 60,
            "graceful_timeout": 10,
            "accesslog": self.access_log,
            # The path without its query: installers' URLs carry their token in ?token=.
            "access_log_format": '%(h)s %(t)s "%(m)s %(U)s %(H)s" %(s)s %(b)s %(M)sms',
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
            self.worker = subprocess.Popen(command)
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


def serve(settings: Settings, run_worker: bool = True, access_log: str | None = None,
          config_file: str | None = None) -> None:
    LabLeaseServer(settings, run_worker, access_log, config_file).run()
