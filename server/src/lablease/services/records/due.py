"""What becomes due with time (expiries, warnings, watchdogs, AR transitions), one item at a time.

A step names its rows (a table, the time column that makes a row due, and
the condition under which the row is still pending) and what to do with one
row. The worker lists the ids that are due, then handles each in a
transaction of its own: the row is locked and checked to be still due
(several workers on PostgreSQL skip each other's rows; SQLite's single
writer does the same). An item whose handling raises is **parked**
(worker_failures: its kind, id and error): no longer due, so one bad row is
tried once, logged once and never holds up the others, also after a restart.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Callable

from sqlalchemy import exists, select

from ...store.worker_tables import WorkerFailure
from . import activity


@dataclass(frozen=True)
class Step:
    kind: str  # names parked items, e.g. "reservation_expiry"
    label: str  # for the log: "returned reservation 42"
    model: type
    time: object  # the column whose time makes a row due
    pending: object  # the condition under which a row may still become due
    act: Callable[..., None]  # act(uow, row, now)
    subject: str | None = None  # the activity log's object type, to record a parked item there too
    # What to do instead of parking an item whose handling raised: on_error(uow, id, now, error).
    on_error: Callable[..., None] | None = None


def not_parked(kind: str, id_column):
    return ~exists().where(WorkerFailure.kind == kind, WorkerFailure.item_id == id_column)


def due_conditions(step: Step, now: datetime):
    """The WHERE clauses of a row of `step` that is due at `now` (and not parked)."""
    return (step.time <= now, step.pending, not_parked(step.kind, step.model.id))


def due_ids(uow, step: Step, now: datetime, batch: int = 100) -> list[int]:
    query = select(step.model.id).where(*due_conditions(step, now)).order_by(step.time, step.model.id).limit(batch)
    return list(uow.session.execute(query).scalars())


def handle(uow, step: Step, ident: int, now: datetime) -> datetime | None:
    """Do the step for one item; returns when it was due (for the lateness metric), or None when it is
    no longer due (done meanwhile, or another worker's)."""
    query = (select(step.model).where(step.model.id == ident, *due_conditions(step, now))
             .with_for_update(skip_locked=True, of=step.model))
    row = uow.session.execute(query).unique().scalar_one_or_none()
    if row is None:
        return None
    due_at = getattr(row, step.time.key)  # read before acting: acting moves it
    step.act(uow, row, now)
    return due_at


def next_time(uow, step: Step):
    """When the step's next item becomes due (parked items never do): an index lookup on the time column."""
    item = next_item(uow, step)
    return item[1] if item else None


_NEXT: dict[str, object] = {}  # each step's "next item" query, built once: the worker asks it at every pass


def next_item(uow, step: Step) -> tuple[int, datetime] | None:
    """(id, due time) of the step's next item, or None."""
    query = _NEXT.get(step.kind)
    if query is None:
        query = _NEXT[step.kind] = select(step.model.id, step.time).where(
            step.time.is_not(None), step.pending, not_parked(step.kind, step.model.id)).order_by(step.time).limit(1)
    row = uow.session.execute(query).first()
    return tuple(row) if row else None


def failed(uow, step: Step, ident: int, now: datetime, error: str) -> None:
    """Handling the item raised: record it so it is not tried again at every pass."""
    if step.on_error is not None:
        step.on_error(uow, ident, now, error)
    else:
        park(uow, step.kind, ident, now, error, step.subject)


def park(uow, kind: str, ident: int, now: datetime, error: str, subject: str | None = None) -> None:
    """Record that handling this item raised: it is no longer due (the API can still act on it)."""
    session = uow.session
    if session.get(WorkerFailure, (kind, ident)) is None:
        session.add(WorkerFailure(kind=kind, item_id=ident, error=error[:4000], failed_at=now))
    if subject is not None:
        activity.record(uow, None, now, subject, ident, "worker_failed", kind, None, error[:1000])
