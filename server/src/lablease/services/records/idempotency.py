"""Idempotency records: find the answer a key got, keep a new one in the request's transaction, prune old ones."""
from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import delete, select

from ...domain.idempotency import Asked
from ...store.idempotency_tables import IdempotencyRecord


def find(uow, user_id: int, key: str) -> IdempotencyRecord | None:
    return uow.session.execute(select(IdempotencyRecord).where(IdempotencyRecord.user_id == user_id,
                                                           IdempotencyRecord.key == key)).scalar_one_or_none()


def asked(record: IdempotencyRecord) -> Asked:
    return Asked(record.method, record.path, record.body_hash)


def keep(uow, user_id: int, key: str, request: Asked, status: int, mimetype: str, answer: str,
         now: datetime) -> None:
    """Record the answer with the request's own writes: both are committed, or neither (flushed here, so a
    concurrent request that kept the same key first fails this one's insert: api/app.py answers with its)."""
    session = uow.session
    session.add(IdempotencyRecord(user_id=user_id, key=key, method=request.method, path=request.path,
                                  body_hash=request.body_hash, status=status, mimetype=mimetype, answer=answer,
                                  created_at=now))
    session.flush()


def prune(uow, now: datetime, keep_for: timedelta) -> int:
    """Delete the records older than `keep_for` (the setting idempotency_keep); how many went."""
    gone = uow.session.execute(delete(IdempotencyRecord).where(IdempotencyRecord.created_at <= now - keep_for))
    return gone.rowcount or 0
