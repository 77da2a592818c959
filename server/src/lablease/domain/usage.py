"""Usage reports: the period asked for, and the time a system spent in each usage state.

Time counts only while the system existed: from its creation, and not while
its condition was `removed`. Before it was added a system was not idle; it
was not there, and counting that time as idle would make a new system look
unused.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .errors import Invalid
from .systems import USAGES
from .times import format_time


@dataclass(frozen=True)
class Change:
    """One recorded change: field `usage` or `condition`, to `new`, at `at` (in the order recorded)."""

    at: datetime
    field: str
    new: str


def check_period(start: datetime, end: datetime) -> None:
    if start >= end:
        raise Invalid("from", f"must be before until ({format_time(end)})")


def time_in_states(created_at: datetime, usage: str, condition: str, changes: list[Change], start: datetime,
                   end: datetime) -> dict[str, float]:
    """Seconds in each usage state within [start, end), counting only while the system existed.

    usage and condition are the system's states at `start` (or at its creation, if later);
    changes are those after that moment, in order.
    """
    seconds = dict.fromkeys(USAGES, 0.0)
    cursor = max(start, created_at)
    for change in changes:
        if change.at >= end:
            break
        if change.at > cursor:
            if condition != "removed":
                seconds[usage] += (change.at - cursor).total_seconds()
            cursor = change.at
        if change.field == "usage":
            usage = change.new
        elif change.field == "condition":
            condition = change.new
    if end > cursor and condition != "removed":
        seconds[usage] += (end - cursor).total_seconds()
    return seconds


def share_busy(seconds: dict[str, float]) -> float:
    """The part of the counted time the system was in use (neither idle nor pending)."""
    total = sum(seconds.values())
    return round((total - seconds["idle"] - seconds["pending"]) / total, 4) if total else 0.0
