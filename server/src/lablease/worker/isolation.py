"""Each item the worker handles (a command, a notice, an expiry...) in a transaction of its own.

An item whose handling raises is logged once, with its id and the
traceback, and recorded as failed through the first recorder that works
(e.g. a command failed with its consequences, else the command alone), so
it is not tried again at every pass; the pass goes on with the others.
A transient database error (a deadlock, a lock wait) says nothing about the
item: it is only logged, and the item tried at the next pass. When the
database itself is away (store/outage.py: unreachable, disk full, out of
connections) the error is raised again: the pass stops and the worker backs off
rather than trying every other item in vain.
"""
from __future__ import annotations

import logging
from typing import Callable, TypeVar

from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError

from ..config import Settings
from ..domain.errors import DomainError
from ..services.handlers import unit_of_work
from ..store.db import Database
from ..store.outage import outage

log = logging.getLogger("lablease.worker")
T = TypeVar("T")


def describe(error: BaseException) -> str:
    """The error as stored and logged: expected kinds by their message, anything else with its type
    (a database error by the database's own message: SQLAlchemy's adds lines about autoflush)."""
    cause = getattr(error, "orig", None) or error
    text = (str(cause) or type(cause).__name__).strip().splitlines()[0]
    if isinstance(error, (ValueError, DomainError, OSError)):
        return text
    return f"unexpected {type(error).__name__}: {text}"


def transient(error: BaseException) -> bool:
    """A database error that may well not happen again (OperationalError covers SQLite's "database is
    locked" and PostgreSQL's deadlocks, serialization failures and lost connections)."""
    return isinstance(error, (OperationalError, InterfaceError)) or (
        isinstance(error, DBAPIError) and error.connection_invalidated)


def alone(db: Database, settings: Settings, work: Callable[..., T], waker=None) -> T:
    """work(uow) in a transaction of its own, committed when it returns."""
    with unit_of_work(db, settings, waker) as uow:
        result = work(uow)
        uow.commit()
    return result


def failed(db: Database, settings: Settings, what: str, ident, error: BaseException,
           *recorders: Callable[..., None], waker=None) -> None:
    """Log the failure once and record it with the first of `recorders` (each recorder(uow)) that works;
    raise it again when the database is away."""
    found = outage(error)
    if found is not None and found.away:
        raise error
    if transient(error):
        log.warning("%s %s not handled this time, tried again at the next pass: %s", what, ident, describe(error))
        return
    log.error("%s %s failed: %s", what, ident, describe(error), exc_info=error)
    for recorder in recorders:
        try:
            alone(db, settings, recorder, waker)
            return
        except Exception:
            log.exception("%s %s: recording its failure failed too", what, ident)
