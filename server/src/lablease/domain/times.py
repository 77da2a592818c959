"""How instants are written for people and clients: RFC 3339, UTC, to the second, with Z.

The one formatter (timeparse re-exports it): messages never show microseconds or offsets.
"""
from __future__ import annotations

from datetime import datetime, timezone


def format_time(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    if moment.tzinfo is None:  # naive values are UTC throughout lablease
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")
