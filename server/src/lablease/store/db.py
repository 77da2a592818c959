"""Engines and transactions.

SQLite: WAL, synchronous=NORMAL, a busy timeout, and `BEGIN IMMEDIATE` for
every writing transaction, so that check-then-insert on the calendar is one
atomic step (a deferred BEGIN lets two writers read, then one fails or both
book). Reading transactions use a plain BEGIN and never block writers.
PostgreSQL: one engine; writers lock the rows they decide on (calendar.py).
"""
from __future__ import annotations

from pathlib import Path

from sqlalchemy import create_engine, event
from sqlalchemy.engine import Engine, make_url

from .secrets import private_file


def _sqlite_engine(url: str, immediate: bool) -> Engine:
    engine = create_engine(url, pool_size=8, max_overflow=16, pool_timeout=30)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection, _record):
        # Take transaction control from the driver so BEGIN is ours to emit.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA busy_timeout=15000")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection):
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


class Database:
    """The engines of one database: a writer and a reader (the same one on PostgreSQL)."""

    def __init__(self, url: str):
        self.url = url
        parsed = make_url(url)
        self.dialect = parsed.get_backend_name()
        if self.dialect == "sqlite":
            if parsed.database and parsed.database != ":memory:":
                private_file(Path(parsed.database))  # 0600 (SQLite gives its -wal and -shm files the same mode)
            self.writer = _sqlite_engine(url, immediate=True)
            self.reader = _sqlite_engine(url, immediate=False)
        else:
            self.writer = create_engine(url, pool_size=8, max_overflow=16, pool_pre_ping=True)
            self.reader = self.writer

    @property
    def is_postgresql(self) -> bool:
        return self.dialect == "postgresql"

    def dispose(self) -> None:
        self.writer.dispose()
        if self.reader is not self.writer:
            self.reader.dispose()
