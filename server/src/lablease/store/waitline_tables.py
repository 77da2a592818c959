"""The waiting line for people: a reservation that waits for a system (docs/reservations: "Waiting")."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, false
from sqlalchemy.orm import Mapped, mapped_column, relationship

from .base import Base
from .types import UTCDateTime


class ReservationWait(Base):
    """What a waiting reservation asked for, kept after it is granted (its place in the queue, take_by).

    The reservation row itself has no system until it is granted; its requirement class (the
    scheduler's, shared with recipes that ask alike) lists the systems it may get.
    """

    __tablename__ = "reservation_waits"
    reservation_id: Mapped[int] = mapped_column(ForeignKey("reservations.id", ondelete="CASCADE"), primary_key=True)
    class_id: Mapped[int] = mapped_column(ForeignKey("requirement_classes.id", ondelete="CASCADE"))
    priority: Mapped[int] = mapped_column(Integer)
    queued_at: Mapped[datetime] = mapped_column(UTCDateTime)
    # the length asked for (NULL: unlimited); the window counts from the grant
    duration_seconds: Mapped[int | None] = mapped_column(Integer)
    take_by_seconds: Mapped[int | None] = mapped_column(Integer)
    # healthy_within: granted only a system with a passing health check this recent (health_state.gate_wait)
    healthy_within_seconds: Mapped[int | None] = mapped_column(Integer)
    # an admin's force: granted although it takes a pool below its automation floor (holds.floor_allows)
    force: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    status: Mapped[str] = mapped_column(String(16), default="waiting")  # waiting | granted | cancelled
    granted_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    confirmed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    reservation: Mapped["Reservation"] = relationship(lazy="joined", back_populates="wait")  # noqa: F821 (tables.py)
    # a freed system's waits are read per class in scheduling order from this index, like recipes
    __table_args__ = (Index("ix_reservation_waits_queue", "class_id", "status", "priority", "queued_at",
                            "reservation_id"),)
