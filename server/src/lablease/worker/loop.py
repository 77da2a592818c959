"""The worker: sleep until the next due time (or a wake-up), then do what is due.

It never scans on a fixed interval: each pass asks the database for the
earliest due time (an index lookup) and sleeps until then, at most
`worker_max_sleep`, waking early when a change sends a wake-up. On start it
catches up on everything already due.
"""
from __future__ import annotations

import logging
import threading
import time
from datetime import datetime, timezone
from typing import Callable

from ..config import Settings
from ..services import reservations
from ..store.db import Database
from ..store.uow import UnitOfWork
from ..store.wakeup import WakeListener

log = logging.getLogger("lablease.worker")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


def run_due(db: Database, now: datetime) -> list[int]:
    """Return every reservation due at `now`; one transaction per batch."""
    done: list[int] = []
    while True:
        with UnitOfWork(db) as uow:
            batch = reservations.expire_due(uow, now)
            uow.commit()
        done += batch
        for reservation_id in batch:
            log.info("returned reservation %s (end or heartbeat reached)", reservation_id)
        if not batch:
            return done


def next_due(db: Database) -> datetime | None:
    with UnitOfWork(db, write=False) as uow:
        return reservations.next_due(uow)


class Worker:
    def __init__(self, settings: Settings, db: Database, clock: Callable[[], datetime] = utcnow):
        self.settings = settings
        self.db = db
        self.clock = clock
        self.stopping = threading.Event()
        self._thread: threading.Thread | None = None

    def seconds_to_sleep(self, now: datetime, due: datetime | None) -> float:
        limit = self.settings.worker_max_sleep_seconds
        if due is None:
            return limit
        return min(limit, max(0.0, (due - now).total_seconds()))

    def run(self) -> None:
        listener = WakeListener(self.db)
        log.info("worker started")
        try:
            while not self.stopping.is_set():
                try:
                    run_due(self.db, self.clock())
                    pause = self.seconds_to_sleep(self.clock(), next_due(self.db))
                except Exception:  # a failing pass must not kill the worker; it retries soon
                    log.exception("worker pass failed; retrying in 1 s")
                    pause = 1.0
                self._sleep(listener, pause)
        finally:
            listener.close()
            log.info("worker stopped")

    def _sleep(self, listener: WakeListener, pause: float) -> None:
        """Sleep for pause seconds, or less when woken; in 1 s slices so stop() is prompt."""
        deadline = time.monotonic() + pause
        while not self.stopping.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0 or listener.wait(min(remaining, 1.0)):
                return

    def start(self) -> threading.Thread:
        self._thread = threading.Thread(target=self.run, name="lablease-worker", daemon=True)
        self._thread.start()
        return self._thread

    def stop(self, timeout: float = 5.0) -> None:
        self.stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)
