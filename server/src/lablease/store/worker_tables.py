"""Items the worker could not handle: parked so that one bad row never holds up the others."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from .base import Base
from .types import UTCDateTime


class WorkerFailure(Base):
    """An item (kind + id: a reservation to expire, an AR to move on...) whose handling raised.

    It is not due again while its row is here; fixing the item through the API (returning the
    reservation, deleting the AR) does what the worker could not.
    """

    __tablename__ = "worker_failures"
    kind: Mapped[str] = mapped_column(String(40), primary_key=True)
    item_id: Mapped[int] = mapped_column(Integer, primary_key=True)
    error: Mapped[str] = mapped_column(Text)
    failed_at: Mapped[datetime] = mapped_column(UTCDateTime)


class WorkerHeartbeat(Base):
    """A running worker's sign of life: readiness wants one seen within `worker_heartbeat_timeout`.

    One row per worker process (`host:pid`), written at start, at least every third of the
    timeout, and deleted when the worker stops cleanly; a killed worker's row just grows old.
    """

    __tablename__ = "worker_heartbeats"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    worker: Mapped[str] = mapped_column(String(200), unique=True)
    started_at: Mapped[datetime] = mapped_column(UTCDateTime)
    beat_at: Mapped[datetime] = mapped_column(UTCDateTime, index=True)

