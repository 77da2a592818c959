"""The event feed (`GET /api/v1/events`): every notice recorded once more as an event, read by cursor.

A notice (services/messages/notices.py) is what the webhooks send; the feed keeps the same body, so a
rulebook and a webhook receiver read the same thing. An event is written with its cause's
transaction, last (UnitOfWork.before_commit): on PostgreSQL under a transaction-level advisory lock
taken only then, so ids are handed out in commit order and a reader that saw id N never later finds
a smaller one committed (SQLite's single writer gives that already). Taken last, the lock is never
held while its transaction waits for a row another writer has.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete, event, func, select, text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from ...domain.errors import Gone, Invalid
from ...domain.permissions import Actor
from ...store.event_tables import FeedEvent
from ...store.feed_signal import signal_for, stopping  # noqa: F401 - api/views/events.py asks

_PENDING = "feed_events"  # session.info: the rows to write at commit, each with the transactions it is in
_LISTENING = "feed_listening"  # session.info: rolled-back savepoints drop their rows (_drop_rolled_back)
_LOCK = text("SELECT pg_advisory_xact_lock(7401252701)")  # one number for the feed's order, any value apart
NOW = "now"


def record(uow, rows: list[dict]) -> None:
    """Keep events (kind, user_id, dedupe_key, payload, created_at) to write when the transaction commits."""
    session = uow.session
    if not session.info.get(_LISTENING):
        session.info[_LISTENING] = True
        event.listen(session, "after_soft_rollback", _drop_rolled_back)
    opened = _open_transactions(uow)
    session.info.setdefault(_PENDING, []).extend((opened, row) for row in rows)
    uow.before_commit(lambda: _write_pending(uow))


def _open_transactions(uow) -> tuple:
    """The transaction a row is recorded in and those around it (savepoints: UnitOfWork.step)."""
    session = uow.session
    found, transaction = [], session.get_nested_transaction() or session.get_transaction()
    while transaction is not None:
        found.append(transaction)
        transaction = transaction.parent
    return tuple(found)


def _drop_rolled_back(session, previous_transaction) -> None:
    """A rolled-back savepoint takes its events with it, as it takes its outbox rows."""
    pending = session.info.get(_PENDING)
    if pending:
        pending[:] = [(opened, row) for opened, row in pending if all(t is not previous_transaction for t in opened)]


def _write_pending(uow) -> None:
    rows = [row for _, row in uow.session.info.pop(_PENDING, [])]
    newest = _write(uow, rows)
    if newest and not uow.validate_only:
        uow.after_commit(lambda: signal_for(uow.db).published(newest))


def _write(uow, rows: list[dict]) -> int:
    """Insert the rows (one per dedupe key); the newest id after them, 0 when none was written."""
    session = uow.session
    if not rows:
        return 0
    postgresql = session.get_bind().dialect.name == "postgresql"
    if postgresql:
        session.execute(_LOCK)
    insert = pg_insert if postgresql else sqlite_insert
    written = session.connection().execute(insert(FeedEvent).on_conflict_do_nothing(), rows).rowcount or 0
    return session.execute(select(func.max(FeedEvent.id))).scalar() if written else 0


def parse_cursor(value: str | None, field: str = "after") -> int | str | None:
    """A cursor as the API takes it: digits (an event's cursor), `now`, or None (from the oldest kept)."""
    if value is None:
        return None
    if value == NOW:
        return NOW
    if not value.isascii() or not value.isdigit() or len(value) > 18:
        raise Invalid(field, f"'{value}' is not a cursor (the cursor of an event, or 'now')")
    return int(value)


def read(uow, actor: Actor, after: int | str | None, limit: int) -> tuple[list[dict], int, int]:
    """(events the actor may see after the cursor, the cursor to go on from, the newest id looked at).

    Past the newest id looked at nothing was read: a caller with nothing to see waits for one newer.
    Every event up to it that the actor may see is in the answer unless `limit` cut it short, so the
    cursor to go on from passes over the events of others.
    """
    session = uow.session
    oldest, newest = session.execute(select(func.min(FeedEvent.id), func.max(FeedEvent.id))).one()
    newest = newest or 0
    start = newest if after == NOW else (after or 0)
    if after is not None and oldest is not None and start < oldest - 1:
        raise Gone(f"cursor {start} has expired: the oldest event kept is {oldest} (read on with after={oldest - 1}, "
                   f"or after=now for only what comes next; events are kept for events_keep)", oldest=str(oldest))
    if start > newest:
        # The newest event is never pruned, so a cursor past it was never given by this feed: read on from it
        # and every event up to it would be skipped without a word (a database made anew or restored).
        first = oldest if oldest is not None else newest + 1
        raise Gone(f"cursor {start} is past the newest event ({newest}): it is not from this server's feed (was "
                   f"its database made anew or restored?); read on with after={first - 1} for every event kept, "
                   f"or after=now for only what comes next", oldest=str(first), newest=str(newest))
    query = select(FeedEvent).where(FeedEvent.id > start, FeedEvent.id <= newest).order_by(FeedEvent.id).limit(limit)
    if not actor.is_admin:
        query = query.where(FeedEvent.user_id == actor.id)
    rows = list(session.execute(query).scalars())
    events = [{"cursor": str(row.id), **row.payload} for row in rows]
    cursor = rows[-1].id if len(rows) == limit else max(newest, start)
    return events, cursor, newest


def prune(uow, now: datetime, keep_for: timedelta) -> int:
    """Delete the events older than `keep_for` (events_keep), always keeping the newest one: its id tells an
    expired cursor (older than the oldest kept) from one that saw everything; how many went."""
    newest = select(func.max(FeedEvent.id)).scalar_subquery()
    gone = uow.session.execute(delete(FeedEvent).where(FeedEvent.created_at <= now - keep_for,
                                                       FeedEvent.id < newest))
    return gone.rowcount or 0


def wait(db, seen: int, timeout: float) -> bool:
    """Block, holding no connection, until an event newer than id `seen` is committed (False: `timeout` passed)."""
    return signal_for(db).wait(seen, timeout)
