"""Parsing of the times and durations that users type (API, CLI, config).

Durations: ISO 8601 (`PT4H`, via isodate), `30m 4h 2d 1w` and `h:m:s`
(via pytimeparse2), a number of seconds, or the word `unlimited`.
Times: RFC 3339 with a zone (`2026-11-22T14:00:00Z`).
Grid Engine's forms (qrsub and friends): times `[[CC]YY]MMDDhhmm[.SS]`, in
UTC; durations `h:m:s` (`2:30:00`, `1::1`) or seconds.
"""
from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import isodate
import pytimeparse2

from .domain.errors import Invalid
from .domain.reservations import UNLIMITED


def _units() -> str:
    number = r"(?:[1-9][0-9]{0,2}\.[0-9]{1,3}|[0-9]{1,3})"  # a fraction only of a whole unit: never below a second
    units = {"w": "wks?|weeks?", "d": "days?", "h": "hrs?|hours?", "m": "mins?|minutes?", "s": "secs?|seconds?"}
    return "".join(rf"(?: ?{number} ?(?:[{u}{u.upper()}]|{words}))?" for u, words in units.items())


_ISO_TIME = r"(?:N[hH](?:N[mM])?(?:N[sS])?|N[mM](?:N[sS])?|N[sS])"
_ISO = r"[pP](?:N[wW]|N[dD](?:[tT]T)?|[tT]T)".replace("T)", _ISO_TIME + ")").replace("N", "[0-9]{1,3}")
# Every duration string the API takes, and the API description's pattern for them (api/schemas.py): units
# largest first (1w 2d, 4h30m, 90 minutes), ISO 8601 without years and months (PT4H, P1DT12H), h:m:s or m:s,
# or seconds; a non-zero digit somewhere. The numbers' sizes keep every form under MAX_SECONDS.
DURATION_PATTERN = (r"^(?=[^1-9]*[1-9])\s*(?:" + "|".join(
    [_units(), _ISO, r"[0-9]{1,5}:[0-5][0-9]:[0-5][0-9]|[0-9]{1,2}:[0-5][0-9]", r"[0-9]{1,9}"]) + r")\s*$")
_DURATION = re.compile(DURATION_PATTERN)
_TRY = "(try 4h, 30m, 2d, 1w, 1h30m, PT4H or 1:30:00)"


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
        _check_form(value, field)
    elif isinstance(value, str) and value.strip():
        _check_form(value, field)
        seconds = pytimeparse2.parse(value.strip())
        if seconds is None:
            raise Invalid(field, f"{value!r} is not a duration {_TRY}")
    else:
        raise Invalid(field, "must be a duration such as 4h, 30m, 2d, PT4H or 1:30:00")
    if seconds <= 0:
        raise Invalid(field, "must be positive")
    if seconds < 1:  # the calendar counts whole seconds: less would round to nothing
        raise Invalid(field, "must be at least a second")
    return timedelta(seconds=seconds)


def _check_form(value: str, field: str) -> None:
    """Only the forms DURATION_PATTERN describes: pytimeparse2 reads more (1y, 1d, 4:00:00, ...)."""
    if not _DURATION.fullmatch(value):
        if re.search("[0-9]", value) and not re.search("[1-9]", value):
            raise Invalid(field, "must be positive")
        if value.strip().isascii() and value.strip().isdigit():  # seconds past the nine digits described
            raise Invalid(field, f"{value!r} is out of range")
        raise Invalid(field, f"{value!r} is not a duration {_TRY}")


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


_GE_TIME = re.compile(r"(\d{8}|\d{10}|\d{12})(?:\.(\d{2}))?")
_GE_TIME_FORM = "[[CC]YY]MMDDhhmm[.SS] (e.g. 202611221400 or 11221400.30)"
_GE_HMS = re.compile(r"(\d*):(\d*):(\d*)")


def parse_ge_time(text, now: datetime, field: str = "time") -> datetime:
    """An aware UTC datetime from Grid Engine's `[[CC]YY]MMDDhhmm[.SS]` or from RFC 3339.

    Grid Engine's form (touch -t) is read as UTC: lablease works in UTC and the
    server's zone is no concern of the user's. CC omitted: YY below 70 is
    20YY, else 19YY (as Grid Engine does); the year omitted: the current
    year (of `now`, in UTC). Anything else is parsed as RFC 3339 (parse_time).
    """
    if not isinstance(text, str):
        raise Invalid(field, f"must be a time: {_GE_TIME_FORM} or RFC 3339 such as 2026-11-22T14:00:00Z")
    value = text.strip()
    match = _GE_TIME.fullmatch(value)
    if match:
        return _ge_time(match, text, now, field)
    if "-" in value or ":" in value:  # RFC 3339 intended: its own messages say what is wrong
        return parse_time(value, field)
    raise Invalid(field, (
        f"{text!r} is not a time: give {_GE_TIME_FORM} in UTC, or RFC 3339 such as 2026-11-22T14:00:00Z"))


def _ge_time(match: re.Match, text: str, now: datetime, field: str) -> datetime:
    digits, seconds = match.group(1), match.group(2)
    if len(digits) == 12:
        year, rest = int(digits[:4]), digits[4:]
    elif len(digits) == 10:
        short = int(digits[:2])
        year, rest = (2000 + short if short < 70 else 1900 + short), digits[2:]
    else:
        year, rest = now.astimezone(timezone.utc).year, digits
    month, day, hour, minute = (int(rest[i:i + 2]) for i in range(0, 8, 2))
    try:
        return datetime(year, month, day, hour, minute, int(seconds or 0), tzinfo=timezone.utc)
    except ValueError:
        raise Invalid(field, (
            f"{text!r} is no such time: {_GE_TIME_FORM} needs a month 01-12, a day of that month, "
            "hours 00-23, minutes 00-59 and seconds 00-59")) from None


def parse_ge_duration(value, field: str = "duration") -> timedelta:
    """A timedelta from Grid Engine's `h:m:s` (a field that is 0 may be left empty: `1::1`),
    a number of seconds, or any form parse_duration accepts (4h, PT4H, ...)."""
    if isinstance(value, str):
        match = _GE_HMS.fullmatch(value.strip())
        if match and any(match.groups()):
            hours, minutes, seconds = (int(part or 0) for part in match.groups())
            delta = timedelta(hours=hours, minutes=minutes, seconds=seconds)
            if delta <= timedelta(0):
                raise Invalid(field, "must be positive")
            return delta
    return parse_duration(value, field)
