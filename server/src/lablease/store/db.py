"""Engines and transactions.

SQLite: WAL, synchronous=NORMAL, a busy timeout, and `BEGIN IMMEDIATE` for
every writing transaction, so that check-then-insert on the calendar is one
atomic step (a deferred BEGIN lets two writers read, then one fails or both
book). Reading transactions use a plain BEGIN and never block writers.
PostgreSQL: one engine; writers lock the rows they decide on (calendar.py).
Its URL may name several hosts (a primary and its standbys, libpq's
`target_session_attrs=read-write` picking the primary): each connection
attempt gives up on a host after CONNECT_TIMEOUT seconds, so a failover is a
quick 503, never a request hanging on a host that vanished. A second URL,
`database_read_url`, may name a read-only standby for the lists and pages
(the `replica` engine); nothing that writes, or reads to decide a write, uses it.

A writer waits for SQLite's write lock in Python, not in SQLite's own busy
handler: the API serves under gevent (cli/serve.py), where a wait in C would
freeze every request of the process. The writers of one process queue on a
lock of the process (a gevent lock under gevent), handed to the next writer the
moment the last one commits; only one writer per process then polls for the
database's lock, in short sleeps, against the other processes (the other API
processes, the worker). Before, every waiting thread slept in doubling steps
up to 50 ms, so a lock held for half a millisecond cost waiters tens of them.
"""
from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.exc import OperationalError

BUSY_TIMEOUT = 15.0  # seconds a transaction waits for the database before giving up (503 at the API)
HOLDS = "lablease_holds_write_lock"  # in a pooled connection's info: it holds its process's writer lock
MAX_PAUSE = 0.002  # seconds between tries for the database's lock held by another process
CONNECT_TIMEOUT = 5  # seconds libpq waits for each PostgreSQL host (unless the URL says connect_timeout)

from .secrets import private_file


def _sqlite_engine(url: str, immediate: bool) -> Engine:
    engine = create_engine(url, pool_size=8, max_overflow=16, pool_timeout=30)
    writers = threading.Lock()  # made now, after gevent's patching when serving under gevent

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        # Take transaction control from the driver so BEGIN is ours to emit.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        # In WAL mode only taking the write lock (BEGIN IMMEDIATE) can find the database busy; the
        # writer waits for it in _begin_immediate. A reader waits in SQLite (WAL recovery, rare).
        cursor.execute(f"PRAGMA busy_timeout={0 if immediate else int(BUSY_TIMEOUT * 1000)}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection):
        if immediate:
            _begin_immediate(connection, writers)
        else:
            connection.exec_driver_sql("BEGIN")

    if immediate:
        # The transaction has ended once its connection goes back to the pool (after its COMMIT or
        # ROLLBACK): the next writer of this process may begin.
        def _release(_dbapi_connection, record, *_):
            if record is not None and record.info.pop(HOLDS, False):
                writers.release()

        for name in ("checkin", "invalidate", "detach"):  # however the connection leaves its transaction
            event.listen(engine, name, _release)

    return engine


def _begin_immediate(connection, writers: threading.Lock) -> None:
    deadline = time.monotonic() + BUSY_TIMEOUT
    info = connection.connection.info
    if not info.get(HOLDS):
        if not writers.acquire(timeout=BUSY_TIMEOUT):
            raise OperationalError("BEGIN IMMEDIATE", {}, sqlite3.OperationalError("database is locked"))
        info[HOLDS] = True
    pause = 0.0002
    while True:
        try:
            connection.exec_driver_sql("BEGIN IMMEDIATE")
            return
        except OperationalError as error:
            if "locked" not in str(error.orig) or time.monotonic() + pause > deadline:
                raise
        time.sleep(pause)
        pause = min(pause * 2, MAX_PAUSE)


def _postgresql_engine(url: str) -> Engine:
    timeout = {} if "connect_timeout" in make_url(url).query else {"connect_timeout": CONNECT_TIMEOUT}
    return create_engine(url, pool_size=8, max_overflow=16, pool_pre_ping=True, connect_args=timeout)


def libpq_params(url, password: bool = True) -> dict[str, str]:
    """The libpq connection parameters of a `postgresql+psycopg` URL, as psycopg gets them from SQLAlchemy.

    A connection of our own (the worker's LISTEN, pg_dump) is made from these, never from the URL rendered
    back as text: a multi-host URL (`?host=a:5432&host=b:5432`) renders as repeated `host` parameters,
    of which libpq keeps one, so that connection would miss the hosts the engine fails over to."""
    url = make_url(url)
    _args, params = url.get_dialect()().create_connect_args(url)
    params = {key: str(value) for key, value in params.items() if key != "context"}
    if not password:
        params.pop("password", None)
    if url.drivername.startswith("postgresql"):
        params.setdefault("connect_timeout", str(CONNECT_TIMEOUT))
    return params


class Database:
    """The engines of one database: a writer, a reader (the same one on PostgreSQL) and the replica the lists
    and pages read (the reader, unless `read_url` names a standby)."""

    def __init__(self, url: str, read_url: str = ""):
        self.url = url
        parsed = make_url(url)
        self.dialect = parsed.get_backend_name()
        if self.dialect == "sqlite":
            if parsed.database and parsed.database != ":memory:":
                private_file(Path(parsed.database))  # 0600 (SQLite gives its -wal and -shm files the same mode)
            self.writer = _sqlite_engine(url, immediate=True)
            self.reader = _sqlite_engine(url, immediate=False)
        else:
            self.writer = _postgresql_engine(url)
            self.reader = self.writer
        # Reads that may be a moment behind (lists, pages): a standby's, when the site names one.
        self.replica = _postgresql_engine(read_url) if read_url else self.reader

    @property
    def is_postgresql(self) -> bool:
        return self.dialect == "postgresql"

    @property
    def engines(self) -> list[Engine]:
        return list(dict.fromkeys((self.writer, self.reader, self.replica)))

    def dispose(self) -> None:
        for engine in self.engines:
            engine.dispose()
