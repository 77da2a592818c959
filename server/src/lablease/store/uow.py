"""Unit of work: one transaction per request or worker step, rolled back unless committed."""
from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator, Mapping

from sqlalchemy.orm import Session

from ..config import Settings
from . import auth_stamp  # noqa: F401 - commits that change who a token stands for move its stamp
from .db import Database
from .wakeup import Waker


class UnitOfWork:
    """`with UnitOfWork(db) as uow: ...; uow.commit()`; leaving without commit rolls back.

    Callbacks registered with `after_commit` run once the transaction is
    durable (e.g. waking the worker); they never run for a rolled-back one.

    Events (domain/events.py) emitted in it go to `handlers`, the one handler table (event type ->
    handler functions, services/handlers.py): a consequence (`at_once`) as it is emitted, the others
    when the use case is done, before the transaction commits. An event no handler takes is an
    error, never dropped: a unit of work made without the table cannot take events at all.

    A validate-only unit of work (`validate_only = True`, set by the API for `?validate_only=true`
    or by a use case answering "could it be done?") runs the whole use case, its events and the
    database's own checks (a flush), then rolls back where it would commit: nothing is kept, no
    outbox row, no notification, no after-commit callback.
    """

    def __init__(self, db: Database, write: bool = True, waker: Waker | None = None, settings=None,
                 handlers: Mapping[type, tuple] | None = None, read_first: bool = False, replica: bool = False):
        self.db = db
        # A reading unit of work whose answer may be a moment behind (a list, a page) reads the replica: a
        # standby's when the site names one (database_read_url). Never one that writes, nor its reads.
        self.replica = replica and not write
        # A writing unit of work that only reads until it locks a calendar resource ends its reading
        # transaction there: on SQLite it holds the database's write lock just from there to its commit,
        # not for the whole request; on PostgreSQL no transaction stays open (idle) while Python decides.
        self.read_first = read_first and write
        # The site's Settings; a unit of work made without them (a tool, a test) works under the defaults, as a
        # server with no configuration would: no use case skips work for want of settings.
        self.settings = settings if settings is not None else Settings()
        self.handlers = handlers  # event type -> the functions handling it, each called (uow, event)
        self.events: list = []  # emitted, not yet handled
        self.write = write
        self.validate_only = False
        self.waker = waker
        self.session: Session | None = None
        self._after_commit: list[Callable[[], None]] = []
        self._before_commit: list[Callable[[], None]] = []

    def __enter__(self) -> UnitOfWork:
        engine = self.db.writer if (self.write and not self.read_first) else \
            self.db.replica if self.replica else self.db.reader
        self.session = Session(bind=engine, expire_on_commit=False, autoflush=True)
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
        callbacks, self._before_commit = self._before_commit, []
        for callback in callbacks:  # last writes, once the use case and its events are done (the feed's rows)
            callback()
        if self.validate_only:
            self.session.flush()  # the constraints answer too (IntegrityError), as they would on commit
            self.session.rollback()
            self._after_commit = []
            return
        self.session.commit()
        callbacks, self._after_commit = self._after_commit, []
        for callback in callbacks:
            callback()

    @contextmanager
    def step(self) -> Iterator[None]:
        """A part of the unit of work that succeeds or fails alone (an import's rows): a savepoint whose events
        are handled when it succeeds, so their refusals are its own, and dropped with its writes when it fails."""
        pending, self.events = self.events, []
        savepoint = self.session.begin_nested()
        try:
            yield
            self.dispatch()
        except BaseException:
            savepoint.rollback()
            self.events = pending
            raise
        self.events = pending
        savepoint.commit()

    def before_commit(self, callback: Callable[[], None]) -> None:
        """Run `callback` at commit, after every event is handled, in the transaction (validate-only too)."""
        if callback not in self._before_commit:
            self._before_commit.append(callback)

    def after_commit(self, callback: Callable[[], None]) -> None:
        if callback not in self._after_commit:
            self._after_commit.append(callback)

    def emit(self, event) -> None:
        """Handle a consequence now; queue anything else for dispatch."""
        handlers = self._handlers_of(event)
        if event.at_once:
            for handler in handlers:
                handler(self, event)
        else:
            self.events.append(event)

    def _handlers_of(self, event) -> tuple:
        if self.handlers is None:
            raise RuntimeError(f"{type(event).__name__} emitted in a unit of work without the handler table "
                               "(make it with services.handlers.unit_of_work)")
        handlers = self.handlers.get(type(event))
        if not handlers:
            raise RuntimeError(f"no handler takes {type(event).__name__} (services/handlers.py)")
        return handlers

    def dispatch(self) -> None:
        """Handle the events emitted so far, in order (handling may emit more; they are handled too)."""
        while self.events:
            event = self.events.pop(0)
            for handler in self._handlers_of(event):
                handler(self, event)

    def wake_worker(self) -> None:
        """The next due time may have moved: wake the worker once this commits."""
        if self.waker is not None:
            self.waker.in_transaction(self.session)
            self.after_commit(self.waker.after_commit)

    @property
    def is_postgresql(self) -> bool:
        return self.db.is_postgresql
