"""Time windows [start, end) on the calendar; end None means open-ended."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone

from .errors import Invalid
from .times import format_time


def utc(value: datetime) -> datetime:
    """Return value as an aware UTC datetime; naive values are taken as UTC."""
    if value.tzinfo is None:
        return value.replace(tzinfo=timezone.utc)
    return value.astimezone(timezone.utc)


@dataclass(frozen=True)
class Window:
    start: datetime
    end: datetime | None = None

    def __post_init__(self):
        object.__setattr__(self, "start", utc(self.start))
        if self.end is not None:
            object.__setattr__(self, "end", utc(self.end))
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
