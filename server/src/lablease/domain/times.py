"""How lablease writes times and durations, for clients and for people (pure, stdlib only).

The one vocabulary (docs/api.md, "Times and durations"); lablease.timeparse reads what users type.
- An instant in an answer (JSON, the API's error details, --json): RFC 3339, UTC, to the second, with Z
  (`format_time`).
- An instant a person reads (the pages, the CLI's tables and messages): `2026-11-24 19:15 UTC`
  (`format_when`); `for_people` rewrites the RFC 3339 instants of a message (an error's detail, a
  history entry) into that form.
- A duration in an answer: ISO 8601 (`PT4H`; timeparse.format_duration). In a message: the units a
  person types, largest first (`1h30m`, `2d`, `1w3d`; `format_human`), which every form reads back.
- Grid Engine's tools (qrstat) write `h:m:s` (`format_hms`).
"""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

# Clients' clocks differ a little: a start this far in the past means "now" (reservations, advance
# reservations and schedule bookings alike).
START_TOLERANCE = timedelta(minutes=1)

_UNITS = (("w", 604800), ("d", 86400), ("h", 3600), ("m", 60))


def format_time(moment: datetime | None) -> str | None:
    """`2026-11-22T14:00:00Z`: microseconds and offsets are never shown; naive values are UTC."""
    if moment is None:
        return None
    if moment.tzinfo is None:  # naive values are UTC throughout lablease
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def format_when(moment: datetime | None) -> str | None:
    """`2026-11-24 19:15 UTC`: an instant as people read it, to the minute; naive values are UTC."""
    if moment is None:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


# What format_when writes, read back: a person gives a time as it was shown to them (`--end "2026-11-24 19:15
# UTC"`), seconds allowed; only UTC, the one zone people are shown.
_WHEN = re.compile(r"^\s*(\d{4}-\d{2}-\d{2})[Tt ](\d{2}:\d{2})(:\d{2})?\s*UTC\s*$")


def when_as_rfc3339(text: str) -> str | None:
    """`2026-11-24 19:15 UTC` -> `2026-11-24T19:15:00Z`; None for any other text (it goes on as typed)."""
    match = _WHEN.match(text)
    if match is None:
        return None
    date, clock, seconds = match.groups()
    return f"{date}T{clock}{seconds or ':00'}Z"


# An RFC 3339 instant inside a text (what format_time writes, or another zone, minutes or fractions). What
# follows it may be a colon ("since 2026-11-27T17:41:18Z: the system..."), not more digits of a time.
_INSTANT = re.compile(r"\b(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)(Z|[+-]\d{2}:\d{2})(?!\w|:\d)")


def for_people(text: str | None) -> str | None:
    """A message with every RFC 3339 instant in it written as `format_when` writes it.

    Messages (errors, history entries, notices) hold RFC 3339 instants, which the API gives as they are;
    the pages and the CLI's human output show them to people through this."""
    if not text:
        return text

    def people(match: re.Match) -> str:
        date, clock, zone = match.groups()
        try:
            moment = datetime.fromisoformat(f"{date}T{clock}{'+00:00' if zone == 'Z' else zone}")
        except ValueError:  # 2026-13-45T..: not an instant, left as written
            return match.group(0)
        return format_when(moment)

    return _INSTANT.sub(people, text)


def format_human(length: timedelta | float | None) -> str | None:
    """A duration for a message: 1h30m, 45m, 2d3h, 1w, 10s, 0.5s; 0s for nothing or less."""
    if length is None:
        return None
    seconds = length.total_seconds() if isinstance(length, timedelta) else float(length)
    if seconds <= 0:
        return "0s"
    whole, fraction = divmod(seconds, 1)
    rest, parts = int(whole), []
    for unit, size in _UNITS:
        if rest >= size:
            parts.append(f"{rest // size}{unit}")
            rest %= size
    if rest or fraction:
        parts.append(f"{round(rest + fraction, 3):g}s")
    return "".join(parts)


def format_hms(seconds: float | None) -> str | None:
    """Grid Engine's duration (qrstat): 5400 -> `01:30:00`; hours go past 24."""
    if seconds is None:
        return None
    whole = int(round(float(seconds)))
    return f"{whole // 3600:02d}:{whole % 3600 // 60:02d}:{whole % 60:02d}"
