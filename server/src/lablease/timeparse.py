"""Parsing of the times and durations that users type (API, CLI, config).

Durations: ISO 8601 (`PT4H`, via isodate), `30m 4h 2d 1w` and `h:m:s`
(via pytimeparse2), a number of seconds, or the word `unlimited`.
Times: RFC 3339 with a zone (`2026-11-22T14:00:00Z`).
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import isodate
import pytimeparse2

from .domain.errors import Invalid
from .domain.reservations import UNLIMITED


def parse_duration(value, field: str = "duration", allow_unlimited: bool = False) -> timedelta | str:
    """A timedelta, or UNLIMITED when allowed and asked for."""
    if isinstance(value, bool):
        raise Invalid(field, "must be a duration such as 4h, 30m, 2d, PT4H or 1:30:00")
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif isinstance(value, str) and value.strip().lower() == UNLIMITED and allow_unlimited:
        return UNLIMITED
    elif isinstance(value, str) and value.strip().upper().startswith("P"):
        seconds = _iso_seconds(value.strip().upper(), field)
    elif isinstance(value, str) and value.strip():
        seconds = pytimeparse2.parse(value.strip())
        if seconds is None:
            raise Invalid(field, f"{value!r} is not a duration (try 4h, 30m, 2d, 1w, PT4H or 1:30:00)")
    else:
        raise Invalid(field, "must be a duration such as 4h, 30m, 2d, PT4H or 1:30:00")
    if seconds <= 0:
        raise Invalid(field, "must be positive")
    return timedelta(seconds=seconds)


def _iso_seconds(value: str, field: str) -> float:
    try:
        parsed = isodate.parse_duration(value)
    except (isodate.ISO8601Error, ValueError):
        raise Invalid(field, f"{value!r} is not an ISO 8601 duration") from None
    if isinstance(parsed, isodate.Duration):  # years or months: no fixed length
        raise Invalid(field, "years and months have no fixed length; use weeks or days")
    return parsed.total_seconds()


def parse_time(value, field: str) -> datetime:
    """An aware UTC datetime from an RFC 3339 string."""
    if not isinstance(value, str):
        raise Invalid(field, "must be an RFC 3339 time such as 2026-11-22T14:00:00Z")
    try:
        parsed = datetime.fromisoformat(value.strip())
    except ValueError:
        raise Invalid(field, f"{value!r} is not an RFC 3339 time such as 2026-11-22T14:00:00Z") from None
    if parsed.tzinfo is None:
        raise Invalid(field, f"{value!r} has no time zone; add Z for UTC")
    return parsed.astimezone(timezone.utc)


def format_time(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def format_duration(delta: timedelta | None) -> str | None:
    """ISO 8601, e.g. PT4H, P1DT2H30M."""
    if delta is None:
        return None
    return isodate.duration_isoformat(delta)
