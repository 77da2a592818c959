"""Each item the worker handles (a command, a notice, an expiry...) in a transaction of its own.

An item whose handling raises is logged once, with its id and the
traceback, and recorded as failed through the first recorder that works
(e.g. a command failed with its consequences, else the command alone), so
it is not tried again at every pass; the pass goes on with the others.
"""
from __future__ import annotations

import logging
from typing import Callable, TypeVar

from ..config import Settings
from ..domain.errors import DomainError
from ..services import unit_of_work
from ..store.db import Database

log = logging.getLogger("lablease.worker")
T = TypeVar("T")


def describe(error: BaseException) -> str:
    """The error as stored and logged: expected kinds by their message, anything else with its type
    (a database error by the database's own message: SQLAlchemy's adds lines about autoflush)."""
    cause = getattr(error, "orig", None) or error
    text = (str(cause) or type(cause).__name__).strip().splitlines()[0]
    return text if isinstance(error, (ValueError, DomainError, OSError)) else f"unexpected {type(error).__name__}: {text}"


def alone(db: Database, settings: Settings, work: Callable[..., T], waker=None) -> T:
    """work(uow) in a transaction of its own, committed when it returns."""
    with unit_of_work(db, settings, waker) as uow:
        result = work(uow)
        uow.commit()
    return result


def failed(db: Database, settings: Settings, what: str, ident, error: BaseException,
           *recorders: Callable[..., None], waker=None) -> None:
    """Log the failure once and record it with the first of `recorders` (each recorder(uow)) that works."""
    log.error("%s %s failed: %s", what, ident, describe(error), exc_info=error)
    for recorder in recorders:
        try:
            alone(db, settings, recorder, waker)
            return
        except Exception:
            log.exception("%s %s: recording its failure failed too", what, ident)
