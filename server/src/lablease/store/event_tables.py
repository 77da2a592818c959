"""The event feed's history: one row per notice (services/messages/notices.py), read by `GET /api/v1/events`."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from .base import Base
from .types import Json, UTCDateTime


class FeedEvent(Base):
    """One event as its webhook tells it (`payload` is the webhook's body), kept for `events_keep`.

    `id` is the feed's cursor: ids never go back (AUTOINCREMENT on SQLite, a sequence on PostgreSQL) and
    are handed out in commit order (services/records/feed.py writes them last, under a lock, on PostgreSQL), so a
    reader that saw id N has seen every event below N. `user_id` is whom it concerns (a non-admin reads
    only theirs): a plain number, not a foreign key, so writing an event takes no lock on the user's row
    while the feed's lock is held. One row per `dedupe_key` (`event:key:user`), as the outbox keeps one
    message per destination however often its cause is seen.
    """

    __tablename__ = "feed_events"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    kind: Mapped[str] = mapped_column(String(64))
    user_id: Mapped[int] = mapped_column(Integer, index=True)
    dedupe_key: Mapped[str] = mapped_column(String(400), unique=True)
    payload: Mapped[dict] = mapped_column(Json, default=dict)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)
