"""Figures the worker pre-aggregates for reports, so that no page computes them on request."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import Float, Integer, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from .base import Base
from .types import UTCDateTime


class UtilisationHour(Base):
    """One closed hour of one pool (pool_id 0: every system): seconds per category (domain/utilisation.py).

    Written once per hour and pool by the worker, from the bookings and condition changes of the
    systems that were in the pool when the hour was aggregated. The latest hour of pool 0 is how
    far the aggregation got.
    """

    __tablename__ = "utilisation_hours"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    pool_id: Mapped[int] = mapped_column(Integer)  # no foreign key: a removed pool's history stays
    hour: Mapped[datetime] = mapped_column(UTCDateTime)
    systems: Mapped[int] = mapped_column(Integer, default=0)
    recipe: Mapped[float] = mapped_column(Float, default=0.0)
    manual: Mapped[float] = mapped_column(Float, default=0.0)
    idle: Mapped[float] = mapped_column(Float, default=0.0)
    broken: Mapped[float] = mapped_column(Float, default=0.0)
    __table_args__ = (UniqueConstraint("pool_id", "hour", name="uq_utilisation_hours_pool_hour"),)

