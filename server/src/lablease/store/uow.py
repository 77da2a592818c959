"""Unit of work: one transaction per request or worker step, rolled back unless committed."""
from __future__ import annotations

from typing import Callable

from sqlalchemy.orm import Session

from . import auth_stamp  # noqa: F401 - commits that change who a token stands for move its stamp
from .db import Database
from .wakeup import Waker


class UnitOfWork:
    """`with UnitOfWork(db) as uow: ...; uow.commit()`; leaving without commit rolls back.

    Callbacks registered with `after_commit` run once the transaction is
    durable (e.g. waking the worker); they never run for a rolled-back one.
    """

    def __init__(self, db: Database, write: bool = True, waker: Waker | None = None, settings=None,
                 handlers: tuple = (), read_first: bool = False):
        self.db = db
        # A writing unit of work that only reads until it locks a calendar resource ends its reading
        # transaction there: on SQLite it holds the database's write lock just from there to its commit,
        # not for the whole request; on PostgreSQL no transaction stays open (idle) while Python decides.
        self.read_first = read_first and write
        self.settings = settings  # the site's Settings, for use cases that queue notices
        self.handlers = handlers  # called for each event emitted in this transaction, before it commits
        self.write = write
        self.waker = waker
        self.session: Session | None = None
        self._after_commit: list[Callable[[], None]] = []

    def __enter__(self) -> UnitOfWork:
        engine = self.db.writer if (self.write and not self.read_first) else self.db.reader
        self.session = Session(bind=engine, expire_on_commit=False, autoflush=True)
        self.session.info["uow"] = self
        return self

    def start_writing(self) -> None:
        """End the reading transaction; the rest is a writing one (SQLite: BEGIN IMMEDIATE, the write lock).

        What was read stays loaded; the decisions that must be atomic (the
        calendar check) are made after this point, under the lock. On
        PostgreSQL the reading transaction ends here too, so no transaction
        sits idle while Python works between the reads and the writes (the
        writing part locks its rows with FOR UPDATE).
        """
        if not self.read_first:
            return
        if self.session.new or self.session.dirty or self.session.deleted:
            raise RuntimeError("a read-first unit of work wrote before taking the write lock")
        self.session.commit()
        self.session.bind = self.db.writer
        self.read_first = False

    def __exit__(self, *exc) -> None:
        try:
            self.session.rollback()
        finally:
            self.session.close()

    def commit(self) -> None:
        self.dispatch()
        self.session.commit()
        callbacks, self._after_commit = self._after_commit, []
        for callback in callbacks:
            callback()

    def after_commit(self, callback: Callable[[], None]) -> None:
        if callback not in self._after_commit:
            self._after_commit.append(callback)

    def dispatch(self) -> None:
        """Handle the events emitted so far (handling may emit more; they are handled too)."""
        while events := self.session.info.pop("events", None):
            for event in events:
                for handler in self.handlers:
                    handler(self, *event)

    def wake_worker(self) -> None:
        """The next due time may have moved: wake the worker once this commits."""
        if self.waker is not None:
            self.waker.in_transaction(self.session)
            self.after_commit(self.waker.after_commit)

    @property
    def is_postgresql(self) -> bool:
        return self.db.is_postgresql


def wake_worker(session) -> None:
    """A due time changed deep inside a use case: wake the worker when this session's work commits."""
    uow = session.info.get("uow")
    if uow is not None:
        uow.wake_worker()


def emit(session, name: str, payload) -> None:
    """Record an event (e.g. ("system_freed", system_id)) for the handlers of this transaction."""
    session.info.setdefault("events", []).append((name, payload))


def settings_of(session):
    """The site's Settings of the unit of work this session belongs to (None outside one)."""
    uow = session.info.get("uow")
    return uow.settings if uow is not None else None
