"""Provisioning's tables: installations and the durable command queue."""
from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from sqlalchemy import ForeignKey, Index, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column, relationship

from .base import Base
from .types import Json, UTCDateTime

if TYPE_CHECKING:  # the mapper finds them by name; tables.py is imported at the end
    from .tables import System, User


class Installation(Base):
    """One install of a distro tree on a system, for a reservation's holder or a recipe.

    Its secret token is never stored: it is derived from the site key and
    `nonce` (services/provisioning/installations.py), and the stored kickstart has it
    replaced by a marker.
    """

    __tablename__ = "installations"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    system_id: Mapped[int] = mapped_column(ForeignKey("systems.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    reservation_id: Mapped[int | None] = mapped_column(ForeignKey("reservations.id", ondelete="SET NULL"))
    recipe_id: Mapped[int | None] = mapped_column(ForeignKey("recipes.id", ondelete="SET NULL"), index=True)
    distro_tree_id: Mapped[int | None] = mapped_column(ForeignKey("distro_trees.id", ondelete="SET NULL"))
    distro: Mapped[dict] = mapped_column(Json, default=dict)  # {id, name, arch, variant}, kept if the tree goes
    ks_meta: Mapped[str] = mapped_column(Text, default="")
    kernel_options: Mapped[str] = mapped_column(Text, default="")
    kickstart: Mapped[str] = mapped_column(Text, default="")
    nonce: Mapped[str] = mapped_column(String(64))
    status: Mapped[str] = mapped_column(String(16), default="queued")
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    installed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    watchdog_at: Mapped[datetime | None] = mapped_column(UTCDateTime, index=True)
    system: Mapped[System] = relationship(lazy="joined")
    user: Mapped[User | None] = relationship(lazy="joined")


class Command(Base):
    """A power or netboot action for the worker: queued -> running -> completed | failed.

    A system's commands run one at a time in id order, and commands for the
    same power address (`power_key`) never run at once.
    """

    __tablename__ = "commands"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    system_id: Mapped[int] = mapped_column(ForeignKey("systems.id", ondelete="CASCADE"))
    action: Mapped[str] = mapped_column(String(24))
    status: Mapped[str] = mapped_column(String(16), default="queued")
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    installation_id: Mapped[int | None] = mapped_column(ForeignKey("installations.id", ondelete="SET NULL"))
    power_key: Mapped[str | None] = mapped_column(String(400))
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    due_at: Mapped[datetime] = mapped_column(UTCDateTime)
    lease_until: Mapped[datetime | None] = mapped_column(UTCDateTime)  # running: abandoned after this
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    started_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    finished_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    system: Mapped[System] = relationship(lazy="joined")
    user: Mapped[User | None] = relationship(lazy="joined")
    __table_args__ = (Index("ix_commands_status_due", "status", "due_at"),
                      Index("ix_commands_system", "system_id", "id"))

