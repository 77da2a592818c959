"""The jinja2 environment of the pages: templates in web/templates/, autoescaped, and the few filters they use."""
from __future__ import annotations

from datetime import datetime, timezone
from functools import cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from ..domain.times import format_human, format_time

TEMPLATES = Path(__file__).parent / "templates"


def moment(value) -> datetime | None:
    """A time from a service's answer (RFC 3339 text) or a datetime; None stays None."""
    if value is None or isinstance(value, datetime):
        return value.replace(tzinfo=value.tzinfo or timezone.utc) if value else None
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def when(value) -> str:
    """`2026-11-24 14:00 UTC`: a time a person reads (the exact RFC 3339 time goes in a <time> element)."""
    at = moment(value)
    return at.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC") if at else "—"


def relative(value, now: datetime) -> str:
    """`3h ago` / `in 2h` / `no end` — durations in the units every form reads back."""
    at = moment(value)
    if at is None:
        return "no end"
    delta = (at - now).total_seconds()
    if abs(delta) < 60:
        return "just now" if delta <= 0 else "in under a minute"
    text = format_human(round(abs(delta) / 60) * 60)
    return f"in {text}" if delta > 0 else f"{text} ago"


def left(seconds: int | None) -> str:
    """Time left, to the minute (`4h59m59s` reads as `5h`)."""
    return format_human(round(seconds / 60) * 60) if seconds is not None else "no limit"


@cache
def environment() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(default=True),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(left=left, when=when, iso=lambda v: format_time(moment(v)) or "", human=format_human)
    env.globals.update(relative=relative)
    return env
