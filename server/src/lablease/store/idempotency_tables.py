"""Answers to writing requests sent with an `Idempotency-Key` (api/idempotency.py), kept for a while."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from .base import Base
from .types import UTCDateTime


class IdempotencyRecord(Base):
    """One user's key and the answer its request got, written in the request's own transaction.

    The unique (user_id, key) decides between two requests sent at once with one key: the second
    one's insert fails and it answers with the first one's record. The worker deletes a record once
    `idempotency_keep` has passed since `created_at` (docs/api.md, "Retrying a write").
    """

    __tablename__ = "idempotency_records"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"))
    key: Mapped[str] = mapped_column(String(128))
    method: Mapped[str] = mapped_column(String(8))
    path: Mapped[str] = mapped_column(Text)  # with its query string
    body_hash: Mapped[str] = mapped_column(String(64))  # sha256 of the body (JSON: in one canonical spelling)
    status: Mapped[int] = mapped_column(Integer)
    mimetype: Mapped[str] = mapped_column(String(100))
    answer: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
    __table_args__ = (UniqueConstraint("user_id", "key", name="uq_idempotency_records_user_id"),)
