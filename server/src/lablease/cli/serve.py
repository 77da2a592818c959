"""`lablease-server serve`: gunicorn with threaded workers, and the worker in the arbiter.

The API runs in gunicorn's worker processes; the background worker runs as
a thread of the arbiter (the master process), started once it is ready, so
there is exactly one however many processes serve requests.
"""
from __future__ import annotations

import logging

from gunicorn.app.base import BaseApplication

from ..config import Settings
from ..store.db import Database
from ..worker.loop import Worker

log = logging.getLogger("lablease.serve")


class LabLeaseServer(BaseApplication):
    def __init__(self, settings: Settings, run_worker: bool = True, access_log: str | None = None):
        self.settings = settings
        self.run_worker = run_worker
        self.access_log = access_log
        self.worker: Worker | None = None
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
            self.worker = Worker(self.settings, Database(self.settings.database))
            self.worker.start()
        log.info("lablease serving on http://%s (worker %s)", self.settings.listen,
                 "in this process" if self.run_worker else "off")

    def _on_exit(self, _arbiter):
        if self.worker is not None:
            self.worker.stop()

    def load(self):
        from ..api import create_app  # built in each worker process after the fork

        return create_app(self.settings)


def serve(settings: Settings, run_worker: bool = True, access_log: str | None = None) -> None:
    LabLeaseServer(settings, run_worker, access_log).run()
