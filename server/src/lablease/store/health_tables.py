"""Health checks (what a site runs to check its systems) and each system's health (services/lifecycle/health.py)."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Boolean, ForeignKey, Index, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column, relationship

from .base import Base
from .types import Json, UTCDateTime


class HealthCheck(Base):
    """A job template run on a system as a health check; scope `system`, `pool` or `arch` names which."""

    __tablename__ = "health_checks"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)
    scope: Mapped[str] = mapped_column(String(8))
    target: Mapped[str] = mapped_column(String(255))
    job: Mapped[dict] = mapped_column(Json)  # the normalised job, one recipe
    source: Mapped[object] = mapped_column(Json)  # the job as given (XML text or JSON): what a client compares
    every_seconds: Mapped[int | None] = mapped_column(Integer)
    after_recipes: Mapped[int | None] = mapped_column(Integer)
    owner_id: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))  # runs its jobs
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    owner: Mapped["User | None"] = relationship(lazy="joined")  # noqa: F821 (store/tables.py)
    __table_args__ = (UniqueConstraint("scope", "target", name="uq_health_checks_scope_target"),)


class SystemHealth(Base):
    """One system's health; `next_check_at` is when the worker submits its next check (services/records/due.py)."""

    __tablename__ = "system_health"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    system_id: Mapped[int] = mapped_column(ForeignKey("systems.id", ondelete="CASCADE"), unique=True)
    state: Mapped[str] = mapped_column(String(8), default="unknown")
    since: Mapped[datetime] = mapped_column(UTCDateTime)
    result: Mapped[str | None] = mapped_column(Text)  # the last check's outcome, in words
    last_check_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    passed_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    recipes_since: Mapped[int] = mapped_column(Integer, default=0)
    forced: Mapped[bool] = mapped_column(Boolean, default=False)
    next_check_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    check_id: Mapped[int | None] = mapped_column(ForeignKey("health_checks.id", ondelete="SET NULL"))
    recipe_id: Mapped[int | None] = mapped_column(ForeignKey("recipes.id", ondelete="SET NULL"), index=True)
    check: Mapped[HealthCheck | None] = relationship(lazy="joined")
    __table_args__ = (Index("ix_system_health_next_check_at", "next_check_at"),)
