"""Labs served by an agent, and the agents' tokens (docs/lab-agents.md).

A lab named here has its power and netboot commands carried out by the agent running inside it
(`lablease-agent`), never by the worker; a lab not named here is served by the worker as before.
"""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import ForeignKey, Integer, String
from sqlalchemy.orm import Mapped, mapped_column

from .base import Base
from .types import UTCDateTime


class Lab(Base):
    """A lab whose commands its agent takes; `agent_seen_at` is the last time an agent of it asked for work."""

    __tablename__ = "labs"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    name: Mapped[str] = mapped_column(String(64), unique=True)  # systems.lab
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    agent_seen_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
    agent_version: Mapped[str | None] = mapped_column(String(64))


class LabToken(Base):
    """An agent token: only its SHA-256 is kept (as for API tokens); it acts for its one lab only."""

    __tablename__ = "lab_tokens"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    lab_id: Mapped[int] = mapped_column(ForeignKey("labs.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UTCDateTime)
    revoked_at: Mapped[datetime | None] = mapped_column(UTCDateTime)
