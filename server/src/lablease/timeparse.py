"""Reading the times and durations that users type (API, CLI, config): the accepted forms.

The one vocabulary is documented in docs/api.md ("Times and durations"); domain/times.py writes
times and durations (answers and messages), format_duration below the ISO form of answers. The
Ansible collection's module_utils/times.py carries a copy of DURATION_PATTERN and of these rules, and
tests/time_cases.yml holds both to the same cases.

Durations: ISO 8601 (`PT4H`, read by isodate), `30m 4h 2d 1w` and `h:m:s`
(read by pytimeparse2), a number of seconds, or the word `unlimited`; the
forms are DURATION_PATTERN's, the refusals are said by CALENDAR_PATTERN (years
and months have no fixed length, so no form takes them: `P1Y` and `1y` alike)
and KNOWN_FORM_PATTERN (a known form, only too long). Times: TIME_PATTERN,
RFC 3339 with a zone (`2026-11-22T14:00:00Z`).
Every duration and time parsed here is held to the calendar's range
(domain/windows.py: durations up to MAX_SECONDS, about 68 years; times 1970..9000), so no
arithmetic on them can overflow.
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
from .domain.windows import MAX_SECONDS, bounded_duration, bounded_instant

NO_FIXED_LENGTH = "years and months have no fixed length; use weeks or days"
_CALENDAR_WORDS = "ys?|yrs?|years?|mos?|mths?|months?"
_UNIT_WORDS = "w|wks?|weeks?|d|days?|h|hrs?|hours?|m|mins?|minutes?|s|secs?|seconds?"
# Numbers with units, one of them years or months (1y, 2 yrs, 3mo, 1 month 2 days): refused as such, with
# the reason ISO 8601's P1Y and P1M are refused for (pytimeparse2 would count them as 365 and 30 days).
CALENDAR_PATTERN = (rf"(?i)^(?=.*[0-9.]\s*(?:{_CALENDAR_WORDS})(?![a-z]))"
                    rf"\s*(?:[0-9.]+\s*(?:{_CALENDAR_WORDS}|{_UNIT_WORDS})(?![a-z])[\s,]*)+$")
_CALENDAR = re.compile(CALENDAR_PATTERN)


def _units(bounded: bool = True) -> str:
    # Digits per unit, so that even all of them at their largest (999w 9999d 99999h 999999m 99999s, about
    # 60 years) stay under MAX_SECONDS, while 1440m or 1000d are still written as people write them.
    units = {"w": ("wks?|weeks?", 3), "d": ("days?", 4), "h": ("hrs?|hours?", 5), "m": ("mins?|minutes?", 6),
             "s": ("secs?|seconds?", 5)}
    parts = []
    for unit, (words, digits) in units.items():
        number = (rf"(?:[1-9][0-9]{{0,2}}\.[0-9]{{1,3}}|[0-9]{{1,{digits}}})" if bounded  # a fraction only of a whole unit
                  else r"(?:[0-9]+\.[0-9]{1,3}|[0-9]+)")
        parts.append(rf"(?: ?{number} ?(?:[{unit}{unit.upper()}]|{words}))?")
    return "".join(parts)


_ISO_TIME = r"(?:N[hH](?:N[mM])?(?:N[sS])?|N[mM](?:N[sS])?|N[sS])"
_ISO = r"[pP](?:N[wW]|N[dD](?:[tT]T)?|[tT]T)".replace("T)", _ISO_TIME + ")").replace("N", "[0-9]{1,3}")
# Every duration string the API takes, and the API description's pattern for them (api/schemas.py): units
# largest first (1w 2d, 4h30m, 90 minutes), ISO 8601 without years and months (PT4H, P1DT12H), h:m:s or m:s,
# or seconds; a non-zero digit somewhere. The numbers' sizes keep every form under MAX_SECONDS.
DURATION_PATTERN = (r"^(?=[^1-9]*[1-9])\s*(?:" + "|".join(
    [_units(), _ISO, r"[0-9]{1,5}:[0-5][0-9]:[0-5][0-9]|[0-9]{1,2}:[0-5][0-9]", r"[0-9]{1,9}"]) + r")\s*$")
_DURATION = re.compile(DURATION_PATTERN)
# The same unit and h:m:s forms with numbers of any size: one of them that is only too long is told so.
KNOWN_FORM_PATTERN = r"^\s*(?:" + _units(bounded=False) + r"|[0-9]+:[0-5][0-9]:[0-5][0-9])\s*$"
_KNOWN_FORM = re.compile(KNOWN_FORM_PATTERN)
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
        seconds = _iso_seconds(value, field)
        if seconds <= MAX_SECONDS:  # a longer one is only too long, whatever its spelling
            _check_form(value, field)
    elif isinstance(value, str) and value.strip():
        if _CALENDAR.fullmatch(value):
            raise Invalid(field, NO_FIXED_LENGTH)  # 1y, 3mo: said as for P1Y, before the forms described
        _check_form(value, field)
        seconds = pytimeparse2.parse(value.strip())
        if seconds is None:
            raise Invalid(field, f"{value!r} is not a duration {_TRY}")
    else:
        raise Invalid(field, "must be a duration such as 4h, 30m, 2d, PT4H or 1:30:00")
    if 0 < seconds < 1:  # the calendar counts whole seconds: less would round to nothing
        raise Invalid(field, "must be at least a second")
    return bounded_duration(seconds, field)


def _check_form(value: str, field: str) -> None:
    """Only the forms DURATION_PATTERN describes: pytimeparse2 reads more (1d, 4:00:00, 1h\n30m, ...)."""
    if not _DURATION.fullmatch(value):
        if re.search("[0-9]", value) and not re.search("[1-9]", value):
            raise Invalid(field, "must be positive")
        if value.strip().isascii() and value.strip().isdigit():  # seconds past the nine digits described
            raise Invalid(field, f"{value!r} is out of range")
        if _KNOWN_FORM.fullmatch(value):  # a known form, only too long: say so
            readable = pytimeparse2.parse(value.strip())  # None only past what a timedelta holds
            bounded_duration(MAX_SECONDS + 1 if readable is None else readable, field)
        raise Invalid(field, f"{value!r} is not a duration {_TRY}")


def _iso_seconds(value: str, field: str) -> float:
    try:
        parsed = isodate.parse_duration(value.strip().upper())
    except (isodate.ISO8601Error, ValueError):
        raise Invalid(field, f"{value!r} is not an ISO 8601 duration") from None
    except OverflowError:  # more days than a timedelta holds: bounded_duration calls it too long
        return 1e20
    if isinstance(parsed, isodate.Duration):  # years or months
        raise Invalid(field, NO_FIXED_LENGTH)
    return parsed.total_seconds()


# Every time the API takes: RFC 3339 (a T, a space or t between date and time; seconds and their fraction
# optional; Z or an offset). Without a zone it is refused as such, with a message saying so.
TIME_PATTERN = (r"^\s*([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:[.,]([0-9]+))?)?"
                r"([Zz]|[+-][0-9]{2}:?[0-9]{2}(?::?[0-9]{2})?)?\s*$")
_TIME = re.compile(TIME_PATTERN)
_TIME_EXAMPLE = "an RFC 3339 time such as 2026-11-22T14:00:00Z"


def parse_time(value, field: str) -> datetime:
    """An aware UTC datetime from an RFC 3339 string (TIME_PATTERN)."""
    if not isinstance(value, str):
        raise Invalid(field, f"must be {_TIME_EXAMPLE}")
    match = _TIME.fullmatch(value)
    if not match:
        raise Invalid(field, f"{value!r} is not {_TIME_EXAMPLE}")
    if match.group(8) is None:
        raise Invalid(field, f"{value!r} has no time zone; add Z for UTC")
    year, month, day, hour, minute, second = (int(part or 0) for part in match.groups()[:6])
    try:
        moment = datetime(year, month, day, hour, minute, second, int((match.group(7) or "0").ljust(6, "0")[:6]),
                          tzinfo=timezone(_offset(match.group(8))))
        moment = moment.astimezone(timezone.utc)
    except ValueError:  # no such day, hour or offset (2026-02-30, 24:00, +25:00)
        raise Invalid(field, f"{value!r} is not {_TIME_EXAMPLE}") from None
    except OverflowError:  # e.g. 9999-12-31T23:00:00-05:00
        raise Invalid(field, f"{value!r} is out of range") from None
    return bounded_instant(moment, field)


def _offset(zone: str) -> timedelta:
    """Z, or [+-]hh[:]mm[[:]ss] east of UTC."""
    digits = zone.replace(":", "")
    if digits in ("Z", "z"):
        return timedelta(0)
    sign = -1 if digits[0] == "-" else 1
    return sign * timedelta(hours=int(digits[1:3]), minutes=int(digits[3:5]), seconds=int(digits[5:7] or 0))


def format_duration(delta: timedelta | None) -> str | None:
    """ISO 8601, e.g. PT4H, P1DT2H30M."""
    if delta is None:
        return None
    return isodate.duration_isoformat(delta)


_GE_TIME = re.compile(r"(\d{8}|\d{10}|\d{12})(?:\.(\d{2}))?")
_GE_TIME_FORM = "[[CC]YY]MMDDhhmm[.SS] (e.g. 202611221400 or 11221400.30)"
# [[h:]m:]s with at least one colon; a field that is 0 may be left empty (1::1, ::30, 2:30)
GE_HMS = re.compile(r"(?:(?:(\d*):)?(\d*):)(\d*)")


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
        return bounded_instant(datetime(year, month, day, hour, minute, int(seconds or 0), tzinfo=timezone.utc), field)
    except ValueError:
        raise Invalid(field, (
            f"{text!r} is no such time: {_GE_TIME_FORM} needs a month 01-12, a day of that month, "
            "hours 00-23, minutes 00-59 and seconds 00-59")) from None


def parse_ge_duration(value, field: str = "duration") -> timedelta:
    """A timedelta from Grid Engine's `[[h:]m:]s` (GE_HMS: `2:30:00`, `1::1`, `2:30` is m:s), a number
    of seconds, or any form parse_duration accepts (4h, PT4H, ...)."""
    if isinstance(value, str):
        match = GE_HMS.fullmatch(value.strip())
        if match and value.strip().isascii() and any(match.groups()):
            hours, minutes, seconds = (int(part or 0) for part in match.groups())
            return bounded_duration(hours * 3600 + minutes * 60 + seconds, field)
    return parse_duration(value, field)
