"""Waking the worker when a change moves the next due time.

The worker sleeps until the next due time; a reserve, extension or
heartbeat that commits may make that earlier, so it sends a wake-up:
PostgreSQL NOTIFY inside the transaction (delivered on commit, to workers
on any host), or on SQLite a datagram to an abstract Unix socket named after
the database file (any process on this host). A lost wake-up costs at most
the worker's maximum sleep.
"""
from __future__ import annotations

import hashlib
import select as select_module
import socket

from sqlalchemy import text

from .db import Database

CHANNEL = "lablease_wake"


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
            session.execute(text("SELECT pg_notify(:channel, '')"), {"channel": CHANNEL})

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
            import psycopg

            url = db.writer.url.set(drivername="postgresql")
            self._conn = psycopg.connect(url.render_as_string(hide_password=False), autocommit=True)
            self._conn.execute(f"LISTEN {CHANNEL}")
        else:
            self._sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            try:
                self._sock.bind(_socket_name(db))
            except OSError:
                self._sock.close()
                raise AlreadyRunning("another lablease worker already runs for this SQLite database") from None
            self._sock.setblocking(False)

    def wait(self, timeout: float) -> bool:
        """Sleep up to timeout seconds; True when a wake-up arrived."""
        timeout = max(0.0, timeout)
        if self._conn is not None:
            woken = False
            for _ in self._conn.notifies(timeout=timeout, stop_after=1):
                woken = True
            return woken
        ready, _, _ = select_module.select([self._sock], [], [], timeout)
        if ready:
            self._drain()
            return True
        return False

    def _drain(self) -> None:
        while True:
            try:
                self._sock.recv(64)
            except BlockingIOError:
                return

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        if self._sock is not None:
            self._sock.close()
