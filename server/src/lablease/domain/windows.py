"""Time windows [start, end) on the calendar; end None means open-ended."""
from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from .errors import Invalid, OutOfRange
from .limits import MAX_INT
from .times import format_time

# The calendar's range. Every instant a user gives or a rule computes lies within
# [EARLIEST, LATEST], and no duration is longer than MAX_SECONDS, so an instant plus
# a duration (even added twice, as an extension does) stays far from datetime's year 9999.
# MAX_SECONDS is what a 32-bit count of seconds holds (about 68 years): durations are
# stored as seconds in integer columns (heartbeats, schedule defaults, jobs' limits).
EARLIEST = datetime(1970, 1, 1, tzinfo=timezone.utc)
LATEST = datetime(9000, 1, 1, tzinfo=timezone.utc)
MAX_SECONDS = MAX_INT


def utc(value: datetime) -> datetime:
    """Return value as an aware UTC datetime; naive values are taken as UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


def bounded_instant(moment: datetime, field: str) -> datetime:
    """moment (aware), or OutOfRange when it lies outside the calendar's range."""
    if not EARLIEST <= moment <= LATEST:
        raise OutOfRange(field, f"must lie between {format_time(EARLIEST)} and {format_time(LATEST)}")
    return moment


def bounded_duration(seconds: float, field: str) -> timedelta:
    """A duration of this many seconds: finite, positive and at most MAX_SECONDS."""
    if not math.isfinite(seconds):
        raise Invalid(field, "must be a finite duration")
    if seconds <= 0:
        raise Invalid(field, "must be positive")
    if seconds > MAX_SECONDS:
        raise OutOfRange(field, f"must be at most {MAX_SECONDS} seconds (about 68 years)")
    return timedelta(seconds=seconds)


@dataclass(frozen=True)
class Window:
    start: datetime
    end: datetime | None = None

    def __post_init__(self):
        object.__setattr__(self, "start", bounded_instant(utc(self.start), "start"))
        if self.end is not None:
            object.__setattr__(self, "end", bounded_instant(utc(self.end), "end"))
            if self.end <= self.start:
                raise Invalid("end", "must be after start")

    def seconds(self) -> float | None:
        return None if self.end is None else (self.end - self.start).total_seconds()


def window_between(start: datetime, end: datetime | None, start_field: str = "start",
                   end_field: str = "end") -> Window:
    """A window from a request: one that ends before it starts names the fields the request sent."""
    if end is not None and utc(end) <= utc(start):
        raise Invalid(end_field, f"must be after {start_field} ({format_time(start)})")
    return Window(start, end)


def overlaps(a: Window, b: Window) -> bool:
    """Half-open windows overlap when each starts before the other ends."""
    return (a.end is None or b.start < a.end) and (b.end is None or a.start < b.end)
