"""The worker: sleep until the next due time (or a wake-up), then do what is due.

It never scans on a fixed interval: each pass asks the database for the
earliest due time (an index lookup) and sleeps until then, at most
`worker_max_sleep`, waking early when a change sends a wake-up. On start it
catches up on everything already due.

The database may go away under it (PostgreSQL restarting, SQLite's disk
full): a pass that fails so logs one line and the worker backs off, doubling
its pause up to MAX_BACKOFF, until a pass works again; it never exits for it
(store/outage.py tells an outage from a bug, which is logged with its traceback).
"""
from __future__ import annotations

import itertools
import logging
import os
import threading
import time
from datetime import datetime, timedelta, timezone
from typing import Callable

from ..config import Settings
from ..domain.errors import DirectoryUnavailable
from ..observe import metrics
from ..services.lifecycle import advance_states, expiry, health, jobs, loans, reservations
from ..services.provisioning import commands, installations
from ..services.auth import directory
from ..services.records import due, feed, idempotency, utilisation
from ..services.reads import monitoring
from ..services.messages import outbox
from ..services.handlers import unit_of_work
from ..store.db import Database
from ..store.outage import outage, reason
from ..store.secrets import SecretBox, use_secrets
from ..store.uow import UnitOfWork
from ..store.wakeup import WakeListener
from .commands import CommandRunner
from .delivery import DeliveryFailed, senders
from .isolation import alone, describe, failed

log = logging.getLogger("lablease.worker")


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


# What the worker does when its time comes, in order (services/records/due.py). Each item is handled
# in a transaction of its own; one that raises is parked and the others go on.
DUE_STEPS = (advance_states.TRANSITION, reservations.EXPIRY, loans.EXPIRY, jobs.OVERDUE, installations.STALLED,
             commands.RECOVERY, reservations.WARNING, loans.WARNING, health.DUE)


REPAIR_EVERY = timedelta(minutes=10)
PRUNE_EVERY = timedelta(minutes=10)  # idempotency records outlive idempotency_keep by at most this
FIRST_BACKOFF, MAX_BACKOFF = 0.5, 8.0  # seconds between passes while the database fails
# A pass woken by a change starts at least this long after the previous pass began: under a burst of
# reserves (hundreds a second) the wake-ups collapse into ten passes a second instead of one pass each,
# which had taken a core of its own. Nothing a wake-up announces is due sooner than this matters.
WAKE_GAP = 0.1
_INSTANCES = itertools.count(1)


# Steps whose plain items are handled a chunk per transaction (services/lifecycle/expiry.py); the rest one by one.
BATCHES = {reservations.EXPIRY.kind: expiry.return_plain}
CHUNKS_PER_READ = 10  # a batched step reads the ids of this many chunks in one query


def run_step(db: Database, settings: Settings, step: due.Step, now: datetime) -> list[int]:
    """Handle every item of one step that is due at `now`; returns the ids handled."""
    handled: list[int] = []
    tried: set[int] = set()  # an item another worker holds (or one that failed) is not tried twice
    batch = BATCHES.get(step.kind)
    size = max(1, settings.worker_batch) if batch else 100
    while True:
        with unit_of_work(db, settings, write=False) as uow:
            ids = [ident for ident in due.due_ids(uow, step, now, size * CHUNKS_PER_READ if batch else size)
                   if ident not in tried]
        if not ids:
            return handled
        for start in range(0, len(ids), size):
            chunk = ids[start:start + size]
            tried.update(chunk)
            done = _chunk(db, settings, step, batch, chunk, now) if batch else {}
            for ident in chunk:
                due_at = done[ident] if ident in done else _one(db, settings, step, ident, now)
                if due_at is not None:
                    handled.append(ident)
                    # by the wall clock: how late the item really was handled, whatever `now` the pass took
                    metrics.instruments().lateness.labels(kind=step.kind).observe(
                        max(0.0, (utcnow() - due_at).total_seconds()))
                    log.info("%s %s", step.label, ident)


def _chunk(db: Database, settings: Settings, step: due.Step, batch, chunk: list[int],
           now: datetime) -> dict[int, datetime]:
    """The chunk's plain items in one transaction: id -> due time of each handled. A chunk whose transaction
    fails is handled one by one instead (so a poisoned item fails alone), unless the database is away."""
    try:
        return dict(alone(db, settings, lambda uow: batch(uow, chunk, now)))
    except Exception as error:
        found = outage(error)
        if found is not None and found.away:
            raise
        log.warning("%s: a chunk of %s failed, handled one by one: %s", step.kind, len(chunk), describe(error))
        return {}


def _one(db: Database, settings: Settings, step: due.Step, ident: int, now: datetime) -> datetime | None:
    """One item in a transaction of its own; when it raises, it is recorded as failed (parked)."""
    try:
        return alone(db, settings, lambda uow: due.handle(uow, step, ident, now))
    except Exception as error:
        failed(db, settings, step.kind, ident, error, lambda uow: due.failed(uow, step, ident, now, describe(error)))
        return None


def run_due(db: Database, now: datetime, settings: Settings | None = None) -> list[int]:
    """Do everything due at `now`; returns the ids of the reservations returned."""
    settings = settings or Settings()
    with unit_of_work(db, settings, write=False) as uow:  # which steps have anything due: one transaction
        due_now = {step.kind for step in DUE_STEPS if (at := due.next_time(uow, step)) is not None and at <= now}
    returned: list[int] = []
    acted = False
    for step in DUE_STEPS:
        # A step with nothing due is skipped (most passes, woken by a change, find nothing due at all); once a
        # step has acted, the later ones are all looked at, as what it did may have made theirs due.
        if step.kind not in due_now and not acted:
            continue
        handled = run_step(db, settings, step, now)
        acted = acted or bool(handled)
        if step is reservations.EXPIRY:
            returned += handled
    return returned


def deliver_due(db: Database, now: datetime, settings: Settings, senders: dict) -> int:
    """Send the outbox messages that are due, each on its own; returns how many were sent."""
    sent, tried = 0, set()
    while True:
        with UnitOfWork(db, write=False) as uow:
            ids = [ident for ident in outbox.due_ids(uow, now) if ident not in tried]
        if not ids:
            return sent
        for ident in ids:
            tried.add(ident)
            sent += _deliver(db, now, settings, senders, ident)


def _deliver(db: Database, now: datetime, settings: Settings, senders: dict, ident: int) -> int:
    """Claim, send and record one message; whatever raises is a failed attempt (retried up to the limit)."""
    try:
        message = alone(db, settings, lambda uow: outbox.claim(uow, ident, now))
    except Exception as error:  # e.g. a destination naming no user: an attempt that failed
        failed(db, settings, "notice", ident, error,
               lambda uow: outbox.attempt_failed(uow, ident, now, describe(error)),
               lambda uow: outbox.fail_bare(uow, ident, now, describe(error)))
        return 0
    if message is None:
        return 0  # sent or taken by another worker meanwhile
    deliveries = metrics.instruments().deliveries
    try:
        senders[message.channel].send(message)
    except DeliveryFailed as failure:
        error = str(failure)
        log.warning("delivery %s failed (attempt %s): %s", message.id, message.attempts, error)
    except Exception as failure:  # a message the sender cannot even build: failed, as any other attempt
        error = describe(failure)
        log.error("delivery %s failed (attempt %s): %s", message.id, message.attempts, error,
                  exc_info=failure if message.attempts == 1 else None)
    else:
        error = None
    deliveries.labels(channel=message.channel, outcome="failed" if error else "sent").inc()
    try:
        if error is None:
            alone(db, settings, lambda uow: outbox.mark_sent(uow, ident, now))
            return 1
        alone(db, settings, lambda uow: outbox.mark_failed(uow, ident, now, error))
    except Exception as failure:
        failed(db, settings, "notice", ident, failure,
               lambda uow: outbox.fail_bare(uow, ident, now, describe(failure)))
    return 0


def next_due(db: Database, now: datetime) -> datetime | None:
    with UnitOfWork(db, write=False) as uow:
        times = [due.next_time(uow, step) for step in DUE_STEPS]
        times += [outbox.next_due(uow), commands.next_due(uow, now)]
    return min((t for t in times if t is not None), default=None)


class Worker:
    def __init__(self, settings: Settings, db: Database, clock: Callable[[], datetime] = utcnow,
                 parent_pid: int | None = None):
        self.settings = settings
        self.db = db
        use_secrets(db, SecretBox(settings))  # power credentials and webhook secrets are read sealed
        self.clock = clock
        self.senders = senders(settings)
        self.commands = CommandRunner(settings, db, clock)
        self.next_repair: datetime | None = None
        self.next_aggregate: datetime | None = None  # when the next hour of utilisation closes
        self.next_prune: datetime | None = None  # when idempotency records are pruned next
        self.next_directory_sync: datetime | None = None  # when directory people's groups are read next
        self.parent_pid = parent_pid  # under `serve`: stop when the server that started us is gone
        self.stopping = threading.Event()
        self.passes = 0  # passes completed: a worker that finished one is asleep or about to be
        self.recovered = False  # what a stopped worker left behind has been taken back (once, on start)
        self.failing_since: float | None = None  # monotonic time of the first failed pass in a row
        self.backoff = FIRST_BACKOFF
        self._thread: threading.Thread | None = None
        self.name = f"{monitoring.worker_name()}/{next(_INSTANCES)}"  # tests run several in one process
        self.beat_every = settings.worker_heartbeat_timeout.total_seconds() / 3
        self.next_beat = 0.0  # time.monotonic() of the next heartbeat
        self.pass_began = 0.0  # time.monotonic() when the last pass began (wake-ups wait wake_gap after it)
        self.wake_gap = WAKE_GAP

    def seconds_to_sleep(self, now: datetime, due: datetime | None) -> float:
        limit = self.settings.worker_max_sleep.total_seconds()
        if due is None:
            return limit
        return min(limit, max(0.0, (due - now).total_seconds()))

    def run(self) -> None:
        listener = WakeListener(self.db)
        log.info("worker started")
        try:
            while not self.stopping.is_set():
                self.pass_began = time.monotonic()
                with metrics.timed(metrics.instruments().passes):
                    pause = self.run_pass()
                metrics.instruments().last_pass.set_to_current_time()
                # first after the first pass (a ready worker has caught up), then every third of the timeout
                self.beat(force=self.passes == 0)
                self.passes += 1  # tests wait for a pass to have completed
                self._sleep(listener, pause)
        finally:
            self.commands.stop()
            listener.close()
            self.forget()
            log.info("worker stopped")

    def recover(self) -> None:
        """Take back what a stopped worker left half done (messages being sent, commands running)."""
        with UnitOfWork(self.db) as uow:
            if recovered := outbox.recover_interrupted(uow):
                log.info("re-queued %s message(s) interrupted by a stop", recovered)
            uow.commit()
        # SQLite has one worker: whatever it left running was interrupted. PostgreSQL may have
        # several, so there a running command is only taken back once its lease has run out.
        self.commands.recover(everything=not self.db.is_postgresql)
        self.recovered = True

    def beat(self, force: bool = True) -> None:
        """Write this worker's heartbeat (readiness reads it); a failure is logged, the worker goes on."""
        if not force and time.monotonic() < self.next_beat:
            return
        try:
            alone(self.db, self.settings, lambda uow: monitoring.beat(uow, self.clock(), self.name))
        except Exception as error:  # the database is away: readiness will say so, the worker retries
            log.warning("heartbeat not written: %s", describe(error))
        self.next_beat = time.monotonic() + self.beat_every

    def forget(self) -> None:
        try:
            alone(self.db, self.settings, lambda uow: monitoring.forget(uow, self.name))
        except Exception as error:
            log.warning("heartbeat not removed: %s", describe(error))

    def run_pass(self) -> float:
        """Do what is due; returns how long to sleep. Each part goes on when another fails (its items
        are isolated already: what fails here is the database itself), and a failed pass backs off."""
        if not self.recovered:
            try:
                self.recover()
            except Exception as error:  # nothing else before it: on SQLite it would fail our own commands
                return self._failed(error)
        parts = (lambda: run_due(self.db, self.clock(), self.settings), self.commands.start_due,
                 lambda: deliver_due(self.db, self.clock(), self.settings, self.senders), self.repair_if_due,
                 self.aggregate_due, self.prune_if_due, self.sync_directory_if_due)
        errors = []
        for part in parts:
            try:
                part()
            except Exception as error:  # a failing pass must not kill the worker
                errors.append(error)
        try:
            due_at = min(filter(None, (next_due(self.db, self.clock()), self.next_repair, self.next_aggregate,
                                         self.next_prune, self.next_directory_sync)),
                         default=None)
        except Exception as error:
            errors.append(error)
        if errors:
            return self._failed(*errors)
        if self.failing_since is not None:
            log.warning("worker passes work again, after %.1f s of failures", time.monotonic() - self.failing_since)
            self.failing_since, self.backoff = None, FIRST_BACKOFF
        return self.seconds_to_sleep(self.clock(), due_at)

    def _failed(self, *errors: Exception) -> float:
        """Log a failed pass; the pause before the next. An outage: one line, and the pause doubles while
        it lasts. A bug (with its traceback): retried in a second, as the other parts of a pass still work."""
        outages = [(found, error) for error in errors if (found := outage(error)) is not None]
        pause = self.backoff if outages else 1.0
        if outages:  # the parts of a pass fail alike when the database is away: one line
            found, error = outages[0]
            log.warning("worker pass failed (%s: %s); retrying in %.1f s", found.title.lower(), reason(error), pause)
            self.backoff = min(self.backoff * 2, MAX_BACKOFF)
        for error in errors:
            if outage(error) is None:
                log.error("worker pass failed; retrying in %.1f s", pause, exc_info=error)
        if self.failing_since is None:
            self.failing_since = time.monotonic()
        return pause

    def repair_if_due(self) -> None:
        """The slow consistency pass (not scheduling: events do that), one recipe at a time."""
        now = self.clock()
        if self.next_repair is not None and now < self.next_repair:
            return
        with unit_of_work(self.db, self.settings, write=False) as uow:
            broken = jobs.needing_repair(uow)
        for recipe_id in broken:
            try:
                if alone(self.db, self.settings, lambda uow: jobs.repair(uow, recipe_id, now)):
                    log.info("aborted recipe %s: its distro tree no longer exists", recipe_id)
            except Exception as error:
                failed(self.db, self.settings, jobs.REPAIR, recipe_id, error,
                       lambda uow: due.park(uow, jobs.REPAIR, recipe_id, now, describe(error), "recipe"))
        self.next_repair = now + REPAIR_EVERY

    def aggregate_due(self) -> None:
        """Utilisation of the hours closed since the last pass (a batch at a time: next_due says when more)."""
        now = self.clock()
        if self.next_aggregate is not None and now < self.next_aggregate:
            return
        hours = alone(self.db, self.settings, lambda uow: utilisation.aggregate(uow, now))
        if hours:
            log.info("aggregated utilisation of %s hour(s)", hours)
        with unit_of_work(self.db, self.settings, write=False) as uow:
            self.next_aggregate = utilisation.next_hour(uow, now)

    def prune_if_due(self) -> None:
        """Delete the idempotency records older than idempotency_keep and the feed events older than events_keep
        (a statement each, every PRUNE_EVERY)."""
        now = self.clock()
        if self.next_prune is not None and now < self.next_prune:
            return
        gone = alone(self.db, self.settings, lambda uow: idempotency.prune(uow, now, self.settings.idempotency_keep))
        if gone:
            log.info("deleted %s idempotency record(s) older than %s", gone, self.settings.idempotency_keep)
        gone = alone(self.db, self.settings, lambda uow: feed.prune(uow, now, self.settings.events_keep))
        if gone:
            log.info("deleted %s feed event(s) older than %s", gone, self.settings.events_keep)
        self.next_prune = now + PRUNE_EVERY

    def sync_directory_if_due(self) -> None:
        """Every ldap_sync_interval: directory people's groups follow the directory, those it no longer has
        lose their tokens (services/auth/directory.py). A directory that does not answer is tried at the next
        interval: the rest of the worker does not wait for it."""
        now = self.clock()
        if not directory.configured(self.settings) or (self.next_directory_sync is not None
                                                       and now < self.next_directory_sync):
            return
        self.next_directory_sync = now + self.settings.ldap_sync_interval
        try:
            read = directory.sync_all(self.db, self.settings, now)
        except DirectoryUnavailable as error:
            log.warning("directory groups not synced: %s; next try in %s", error.detail,
                        self.settings.ldap_sync_interval)
            return
        if read:
            log.info("synced the directory groups of %s user(s)", read)

    def _sleep(self, listener: WakeListener, pause: float) -> None:
        """Sleep for pause seconds, or less when woken; in 1 s slices so stop() is prompt."""
        deadline = time.monotonic() + pause
        while not self.stopping.is_set():
            if self.parent_pid is not None and os.getppid() != self.parent_pid:
                log.warning("the server that started this worker is gone; stopping")
                self.stopping.set()
                return
            self.beat(force=False)  # a worker with nothing due for minutes still says it is alive
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if listener.wait(min(remaining, 1.0)):
                # woken: pass now, or once wake_gap has gone by since the last pass began (later wake-ups
                # are drained by the waits until then: one pass answers them all)
                deadline = min(deadline, self.pass_began + self.wake_gap)

    def start(self) -> threading.Thread:
        self._thread = threading.Thread(target=self.run, name="lablease-worker", daemon=True)
        self._thread.start()
        return self._thread

    def stop(self, timeout: float = 5.0) -> None:
        self.stopping.set()
        if self._thread is not None:
            self._thread.join(timeout)
