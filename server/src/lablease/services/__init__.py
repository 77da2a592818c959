"""Use cases: each takes a unit of work, the acting user and the time."""
from __future__ import annotations

from ..store.db import Database
from ..store.uow import UnitOfWork
from .handlers import HANDLERS


def unit_of_work(db: Database, settings=None, waker=None, write: bool = True, read_first: bool = False) -> UnitOfWork:
    """A unit of work whose events (a freed system, a new recipe set) reach their handlers (services/handlers.py)."""
    return UnitOfWork(db, write=write, waker=waker, settings=settings, handlers=HANDLERS, read_first=read_first)
