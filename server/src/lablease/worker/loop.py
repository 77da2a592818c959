"""The worker: sleep until the next due time (or a wake-up), then do what is due.

It never scans on a fixed interval: each pass asks the database for the
earliest due time (an index lookup) and sleeps until then, at most
`worker_max_sleep`, waking early when a change sends a wake-up. On start it
catches up on everything already due.
"""
from __future__ import annotations

import logging
import os
import threading
import time
from datetime import datetime, timedelta, timezone
from typing import Callable

from ..config import Settings
from ..services import ar_states, commands, installations, jobs, loans, outbox, reservations, unit_of_work
from ..store.db import Database
from ..store.uow import UnitOfWork
from ..store.wakeup import WakeListener
from .commands import CommandRunner
from .delivery import DeliveryFailed, senders

log = logging.getLogger("lablease.worker")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


# What the worker does when its time comes, in order: (name, use case). Each runs in
# batches, one transaction per batch, until nothing is left that is due.
DUE_STEPS = (
    ("advance reservation changed state", ar_states.transition_due),
    ("returned reservation", reservations.expire_due),
    ("returned loan", loans.expire_due),
    ("aborted recipe past its runtime limit", jobs.abort_overdue),
    ("failed stalled installation", installations.abort_stalled),
    ("recovered abandoned command", commands.recover_expired),
    ("warned about reservation", reservations.warn_due),
    ("warned about loan", loans.warn_due),
)


REPAIR_EVERY = timedelta(minutes=10)


def run_due(db: Database, now: datetime, settings: Settings | None = None) -> list[int]:
    """Do everything due at `now`; returns the ids of the reservations returned."""
    settings = settings or Settings()
    returned: list[int] = []
    for label, step in DUE_STEPS:
        while True:
            with unit_of_work(db, settings) as uow:
                batch = step(uow, now)
                uow.commit()
            for ident in batch:
                log.info("%s %s", label, ident)
            if step is reservations.expire_due:
                returned += batch
            if not batch:
                break
    return returned


def deliver_due(db: Database, now: datetime, settings: Settings, senders: dict) -> int:
    """Send the outbox messages that are due; returns how many were sent."""
    sent = 0
    while True:
        with UnitOfWork(db, settings=settings) as uow:
            claimed = outbox.claim_due(uow, now)
            uow.commit()
        if not claimed:
            return sent
        for message in claimed:
            try:
                senders[message.channel].send(message)
                error = None
            except DeliveryFailed as failure:
                error = str(failure)
                log.warning("delivery %s failed (attempt %s): %s", message.id, message.attempts, error)
            with UnitOfWork(db, settings=settings) as uow:
                if error is None:
                    outbox.mark_sent(uow, message.id, now)
                    sent += 1
                else:
                    outbox.mark_failed(uow, message.id, now, error, settings)
                uow.commit()


def next_due(db: Database, now: datetime) -> datetime | None:
    with UnitOfWork(db, write=False) as uow:
        times = (reservations.next_due(uow), loans.next_due(uow), outbox.next_due(uow), jobs.next_due(uow),
                 installations.next_due(uow), commands.next_due(uow, now), ar_states.next_due(uow))
    return min((t for t in times if t is not None), default=None)


class Worker:
    def __init__(self, settings: Settings, db: Database, clock: Callable[[], datetime] = utcnow,
                 parent_pid: int | None = None):
        self.settings = settings
        self.db = db
        self.clock = clock
        self.senders = senders(settings)
        self.commands = CommandRunner(settings, db, clock)
        self.next_repair: datetime | None = None
        self.parent_pid = parent_pid  # under `serve`: stop when the server that started us is gone
        self.stopping = threading.Event()
        self.passes = 0  # passes completed: a worker that finished one is asleep or about to be
        self._thread: threading.Thread | None = None

    def seconds_to_sleep(self, now: datetime, due: datetime | None) -> float:
        limit = self.settings.worker_max_sleep_seconds
        if due is None:
            return limit
        return min(limit, max(0.0, (due - now).total_seconds()))

    def run(self) -> None:
        listener = WakeListener(self.db)
        log.info("worker started")
        with UnitOfWork(self.db) as uow:
            if recovered := outbox.recover_interrupted(uow):
                log.info("re-queued %s message(s) interrupted by a stop", recovered)
            uow.commit()
        # SQLite has one worker: whatever it left running was interrupted. PostgreSQL may have
        # several, so there a running command is only taken back once its lease has run out.
        self.commands.recover(everything=not self.db.is_postgresql)
        try:
            while not self.stopping.is_set():
                try:
                    run_due(self.db, self.clock(), self.settings)
                    self.commands.start_due()
                    deliver_due(self.db, self.clock(), self.settings, self.senders)
                    self.repair_if_due()
                    due = min(filter(None, (next_due(self.db, self.clock()), self.next_repair)), default=None)
                    pause = self.seconds_to_sleep(self.clock(), due)
                except Exception:  # a failing pass must not kill the worker; it retries soon
                    log.exception("worker pass failed; retrying in 1 s")
                    pause = 1.0
                self.passes += 1
                self._sleep(listener, pause)
        finally:
            self.commands.stop()
            listener.close()
            log.info("worker stopped")

    def repair_if_due(self) -> None:
        """The slow consistency pass (not scheduling: events do that)."""
        now = self.clock()
        if self.next_repair is not None and now < self.next_repair:
            return
        with unit_of_work(self.db, self.settings) as uow:
            for recipe_id in jobs.repair(uow, now):
                log.info("aborted recipe %s: its distro tree no longer exists", recipe_id)
            uow.commit()
        self.next_repair = now + REPAIR_EVERY

    def _sleep(self, listener: WakeListener, pause: float) -> None:
        """Sleep for pause seconds, or less when woken; in 1 s slices so stop() is prompt."""
        deadline = time.monotonic() + pause
        while not self.stopping.is_set():
            if self.parent_pid is not None and os.getppid() != self.parent_pid:
                log.warning("the server that started this worker is gone; stopping")
                self.stopping.set()
                return
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
