"""Reading form and query fields with the API's own parsers (times and durations: timeparse.py)."""
from __future__ import annotations

import re

from werkzeug.datastructures import MultiDict

from ...api.inputs import duration_field, query_value
from ..render import when

DURATIONS = ("1h", "4h", "1d", "3d", "1w")  # the Take form's choices; "" = the site's default


def text(values: MultiDict, name: str) -> str | None:
    return (values.get(name) or "").strip() or None


def duration(values: MultiDict, name: str):
    """A duration a person chose (`4h`, `2d`...); empty means the site's default."""
    raw = text(values, name)
    return duration_field({name: raw}, name) if raw else None


def filters(query: MultiDict, names: dict[str, str]) -> dict:
    """The listing's filters from the query string: {name: kind}, as the API's list reads them."""
    return {name: query_value(kind, name, utc(text(query, name)) if kind == "time" else query[name])
            for name, kind in names.items() if text(query, name)}


def utc(raw: str) -> str:
    """A browser's datetime-local value (`2026-11-22T13:00`, no zone) is UTC, as the pages show times."""
    if re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d", raw):
        return raw + ":00Z"
    return raw + "Z" if re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", raw) else raw


def whole(query: MultiDict, name: str, default: int = 1) -> int:
    raw = text(query, name)
    return int(raw) if raw and raw.isdigit() and len(raw) < 7 else default


def holding(made: dict) -> str:
    """The message after a Take: what is held until when."""
    return f"You hold {made['system']} until {when(made['end']) if made['end'] else 'you return it'}."
