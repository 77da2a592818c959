"""Advance reservations' tables: the AR and the systems it holds."""
from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import ForeignKey, Index, Integer, String
from sqlalchemy.orm import Mapped, mapped_column, relationship

from .base import Base
from .types import Json, UTCDateTime

if TYPE_CHECKING:  # the mapper finds them by name; tables.py is imported at the end
    from .tables import System, User


class AdvanceReservation(Base):
    """A Grid Engine-style advance reservation: systems booked for a window, for the users of its ACL.

    States: w (granted, waiting for its start), r (running), x (exited: end reached), d (deleted),
    E (error: a reserved system broke, went away or left its lab). `due_at` is its next change by time.
    """

    __tablename__ = "advance_reservations"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str | None] = mapped_column(String(128), index=True)
    owner_id: Mapped[int] = mapped_column(ForeignKey("users.id"))
    account: Mapped[str | None] = mapped_column(String(128))
    start_at: Mapped[datetime] = mapped_column(UTCDateTime)
    end_at: Mapped[datetime] = mapped_column(UTCDateTime)
    state: Mapped[str] = mapped_column(String(1))
    error_handling: Mapped[str] = mapped_column(String(8), default="soft")
    mail_events: Mapped[str] = mapped_column(String(8), default="")
    mail_to: Mapped[list] = mapped_column(Json, default=list)
    acl: Mapped[list] = mapped_column(Json, default=list)
    requirements: Mapped[dict | None] = mapped_column(Json)
    pools: Mapped[list] = mapped_column(Json, default=list)
    hosts: Mapped[list] = mapped_column(Json, default=list)
    count: Mapped[int] = mapped_column(Integer, default=1)
    error_reasons: Mapped[list] = mapped_column(Json, default=list)
    # systems the owner gave back before the end: [{"system": fqdn, "at": time}] (accounting counts them until then)
    released: Mapped[list | None] = mapped_column(Json)
    submitted_at: Mapped[datetime] = mapped_column(UTCDateTime)
    changed_at: Mapped[datetime] = mapped_column(UTCDateTime)
    due_at: Mapped[datetime | None] = mapped_column(UTCDateTime, index=True)
    owner: Mapped[User] = relationship(lazy="joined")
    systems: Mapped[list["ArSystem"]] = relationship(lazy="selectin", order_by="ArSystem.system_id",
                                                     cascade="all, delete-orphan")
    __table_args__ = (Index("ix_advance_reservations_state", "state"),)


class ArSystem(Base):
    """A system an AR holds: its booking on the system's calendar, and the AR's own calendar for the
    system (`slot_resource_id`), on which the AR's jobs and its users' reservations book."""

    __tablename__ = "ar_systems"
    ar_id: Mapped[int] = mapped_column(ForeignKey("advance_reservations.id", ondelete="CASCADE"), primary_key=True)
    system_id: Mapped[int] = mapped_column(ForeignKey("systems.id", ondelete="CASCADE"), primary_key=True,
                                           index=True)
    booking_id: Mapped[int | None] = mapped_column(ForeignKey("bookings.id", ondelete="SET NULL"))
    slot_resource_id: Mapped[int] = mapped_column(ForeignKey("resources.id"))
    lab: Mapped[str | None] = mapped_column(String(64))  # the system's lab when granted
    system: Mapped[System] = relationship(lazy="joined")

