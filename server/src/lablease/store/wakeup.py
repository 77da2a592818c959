"""Waking the worker when a change moves the next due time.

The worker sleeps until the next due time; a reserve, extension or
heartbeat that commits may make that earlier, so it sends a wake-up:
PostgreSQL NOTIFY inside the transaction (delivered on commit, to workers
on any host), or on SQLite a datagram to an abstract Unix socket named after
the database file (any process on this host). A lost wake-up costs at most
the worker's maximum sleep.

On PostgreSQL the listening connection may die (the server restarts): the
listener then reports a wake-up (notifications may have been lost, so the
worker should look now) and connects again at its next wait; while the
database is away a wait is a plain sleep. With a multi-host URL (a primary
and its standby) the new connection goes to whichever host is the primary
then: a failover moves the LISTEN too.
"""
from __future__ import annotations

import hashlib
import select as select_module
import socket
import time

from sqlalchemy import text

from .db import Database, libpq_params

CHANNEL = "lablease_wake"
_NOTIFY = text("SELECT pg_notify(:channel, '')").bindparams(channel=CHANNEL)


def _socket_name(db: Database) -> bytes:
    digest = hashlib.sha256(db.url.encode()).hexdigest()[:32]
    return b"\0lablease-" + digest.encode()


class Waker:
    """Sends wake-ups; used by the unit of work."""

    def __init__(self, db: Database):
        self.db = db
        self._address = _socket_name(db)

    def in_transaction(self, session) -> None:
        if self.db.is_postgresql:
            session.connection().execute(_NOTIFY)  # Core on the session's connection: no ORM execution around it

    def after_commit(self) -> None:
        if self.db.is_postgresql:
            return
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            try:
                sock.sendto(b"w", self._address)
            except (ConnectionRefusedError, FileNotFoundError, BlockingIOError, OSError):
                pass  # no worker listening on this host: it will catch up when it starts


class AlreadyRunning(RuntimeError):
    """SQLite has one writer: a second worker on the same database would only contend."""


class WakeListener:
    """The worker's side: `wait(timeout)` returns early when woken."""

    def __init__(self, db: Database):
        self.db = db
        self._conn = None
        self._sock = None
        if db.is_postgresql:
            self._listen()
        else:
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            try:
                self._sock.bind(_socket_name(db))
            except OSError:
                self._sock.close()
                raise AlreadyRunning("another lablease worker already runs for this SQLite database") from None
            self._sock.setblocking(False)

    def _listen(self) -> bool:
        """Connect and LISTEN; False while the database cannot be reached."""
        import psycopg

        try:
            # The engine's own parameters: with a multi-host URL it listens on whichever host is the primary now
            # (target_session_attrs=read-write), and after a failover on the new one.
            self._conn = psycopg.connect(**libpq_params(self.db.writer.url), autocommit=True)
            self._conn.execute(f"LISTEN {CHANNEL}")
        except psycopg.Error:
            self.close()
            return False
        return True

    def wait(self, timeout: float) -> bool:
        """Sleep up to timeout seconds; True when a wake-up arrived."""
        timeout = max(0.0, timeout)
        if self._sock is not None:
            ready, _, _ = select_module.select([self._sock], [], [], timeout)
            if ready:
                self._drain()
                return True
            return False
        import psycopg

        if self._conn is None and not self._listen():
            time.sleep(timeout)
            return False
        woken = False
        try:
            for _ in self._conn.notifies(timeout=timeout, stop_after=1):
                woken = True
        except psycopg.Error:  # the connection died: look at once, and listen again at the next wait
            self.close()
            return True
        return woken

    def _drain(self) -> None:
        while True:
            try:
                self._sock.recv(64)
            except BlockingIOError:
                return

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._sock is not None:
            self._sock.close()
