"""Waking the event feed's long polls without a database connection per waiting client.

One `FeedSignal` per process and database holds the newest event id this process knows of and a
condition its waiting requests sleep on. A request that writes events here publishes the new id
after its commit (at once); events written by another process (the worker, another API process or
host) are found by one probe of the newest id at most every `POLL` seconds, made by whichever
waiter's turn it is, on one short-lived connection. So however many clients wait, a process holds
at most one connection for them, and only for the probe (docs/api.md, "Events").
"""
from __future__ import annotations

import threading
import time
import weakref

from sqlalchemy import func, select

from .db import Database
from .event_tables import FeedEvent

POLL = 1.0  # seconds: how late an event written by another process may be seen

_stopping = False  # set once, when this process starts a graceful stop (cli/serve.py)

_SIGNALS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_SIGNALS_LOCK = threading.Lock()


def stop_waiting() -> None:
    """This process is stopping gracefully: every wait ends within `POLL` seconds, and new ones at once.

    A long poll then answers what it has (its cursor unchanged) and a stream ends, well inside gunicorn's
    graceful timeout, instead of being cut off mid-response when it runs out. Only a flag is set: it is
    called from a signal handler, where taking the condition's lock could deadlock.
    """
    global _stopping
    _stopping = True


def stopping() -> bool:
    return _stopping


def newest_id(db: Database) -> int:
    with db.reader.connect() as connection:
        return connection.execute(select(func.max(FeedEvent.id))).scalar() or 0


class FeedSignal:
    def __init__(self, probe):
        self._probe = probe  # () -> the newest event id in the database
        self._condition = threading.Condition()
        self._probing = False
        self._probed_at = float("-inf")
        self.latest = 0
        self.waiting = 0  # requests waiting now (bench/events.py reads it)
        self.probes = 0

    def published(self, newest: int) -> None:
        """Events up to `newest` are committed: wake whoever waits for them."""
        with self._condition:
            if newest > self.latest:
                self.latest = newest
                self._condition.notify_all()

    def wait(self, seen: int, timeout: float) -> bool:
        """Block until an event newer than `seen` (an id) is committed, or `timeout` seconds pass (False)."""
        deadline = time.monotonic() + timeout
        with self._condition:
            self.waiting += 1
            try:
                while self.latest <= seen:
                    now = time.monotonic()
                    if now >= deadline or _stopping:
                        return False
                    if not self._probing and now - self._probed_at >= POLL:
                        self._probe_now()
                        continue
                    self._condition.wait(min(deadline - now, max(POLL - (now - self._probed_at), 0.05)))
                return True
            finally:
                self.waiting -= 1

    def _probe_now(self) -> None:
        """Ask the database for the newest id, with the lock released (others keep waiting meanwhile)."""
        self._probing = True
        self._condition.release()
        try:
            newest = self._probe()
        finally:
            self._condition.acquire()
            self._probing, self._probed_at = False, time.monotonic()
            self.probes += 1
        if newest > self.latest:
            self.latest = newest
            self._condition.notify_all()


def signal_for(db: Database) -> FeedSignal:
    with _SIGNALS_LOCK:
        found = _SIGNALS.get(db)
        if found is None:
            found = _SIGNALS[db] = FeedSignal(lambda: newest_id(db))
        return found
