"""Use cases: each takes a unit of work, the acting user and the time."""
from __future__ import annotations

from ..store.db import Database
from ..store.uow import UnitOfWork


def unit_of_work(db: Database, settings=None, waker=None, write: bool = True, read_first: bool = False) -> UnitOfWork:
    """A unit of work whose events (a freed system, a new recipe set) reach the scheduler."""
    from . import advance_states, jobs, scheduling

    return UnitOfWork(db, write=write, waker=waker, settings=settings,
                      handlers=(scheduling.handle, advance_states.handle, jobs.handle), read_first=read_first)
