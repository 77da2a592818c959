# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Times and durations as the lablease server reads and writes them, for check mode and comparisons.

A copy of the server's vocabulary (lablease.timeparse and lablease.domain.times, documented in the
server's docs/api.md, "Times and durations"): modules cannot import the server. The regular expressions
are the server's, copied as text; tests/time_cases.yml is run against both, so they cannot drift.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re
from datetime import datetime, timedelta, timezone

# The longest duration the server takes: a 32-bit count of seconds, about 68 years.
MAX_SECONDS = 2147483647
# The server's calendar: every time lies between these.
EARLIEST = datetime(1970, 1, 1, tzinfo=timezone.utc)
LATEST = datetime(9000, 1, 1, tzinfo=timezone.utc)

# lablease.timeparse.DURATION_PATTERN, as text: units largest first (1w 2d, 4h30m, 90 minutes), ISO 8601
# without years and months (PT4H, P1DT12H), h:m:s or m:s, or seconds; a non-zero digit somewhere.
DURATION_PATTERN = (
    r"^(?=[^1-9]*[1-9])\s*(?:(?: ?(?:[1-9][0-9]{0,2}\.[0-9]{1,3}|[0-9]{1,3}) ?(?:[wW]|wks?|weeks?))?"
    r"(?: ?(?:[1-9][0-9]{0,2}\.[0-9]{1,3}|[0-9]{1,4}) ?(?:[dD]|days?))?"
    r"(?: ?(?:[1-9][0-9]{0,2}\.[0-9]{1,3}|[0-9]{1,5}) ?(?:[hH]|hrs?|hours?))?"
    r"(?: ?(?:[1-9][0-9]{0,2}\.[0-9]{1,3}|[0-9]{1,6}) ?(?:[mM]|mins?|minutes?))?"
    r"(?: ?(?:[1-9][0-9]{0,2}\.[0-9]{1,3}|[0-9]{1,5}) ?(?:[sS]|secs?|seconds?))?"
    r"|[pP](?:[0-9]{1,3}[wW]|[0-9]{1,3}[dD](?:[tT](?:[0-9]{1,3}[hH](?:[0-9]{1,3}[mM])?(?:[0-9]{1,3}[sS])?"
    r"|[0-9]{1,3}[mM](?:[0-9]{1,3}[sS])?|[0-9]{1,3}[sS]))?"
    r"|[tT](?:[0-9]{1,3}[hH](?:[0-9]{1,3}[mM])?(?:[0-9]{1,3}[sS])?|[0-9]{1,3}[mM](?:[0-9]{1,3}[sS])?|[0-9]{1,3}[sS]))"
    r"|[0-9]{1,5}:[0-5][0-9]:[0-5][0-9]|[0-9]{1,2}:[0-5][0-9]|[0-9]{1,9})\s*$"
)
# lablease.timeparse.TIME_PATTERN, as text: RFC 3339 (T, t or a space; seconds optional; Z or an offset).
TIME_PATTERN = (
    r"^\s*([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:[.,]([0-9]+))?)?"
    r"([Zz]|[+-][0-9]{2}:?[0-9]{2}(?::?[0-9]{2})?)?\s*$"
)
_DURATION = re.compile(DURATION_PATTERN)
_TIME = re.compile(TIME_PATTERN)
_NUMBER = r"([0-9]+(?:[,.][0-9]+)?)"
# Any ISO 8601 duration, years and months included (what the server's ISO reader, isodate, takes).
_ISO_ANY = re.compile(r"^P(?!$)(?:%sY)?(?:%sM)?(?:%sW)?(?:%sD)?(?:T(?:%sH)?(?:%sM)?(?:%sS)?)?$" % ((_NUMBER,) * 7))
# lablease.timeparse.KNOWN_FORM_PATTERN: the unit and h:m:s forms with numbers of any size (one of them that is
# only too long is told so).
KNOWN_FORM_PATTERN = (
    r"^\s*(?:(?: ?(?:[0-9]+\.[0-9]{1,3}|[0-9]+) ?(?:[wW]|wks?|weeks?))?(?: ?(?:[0-9]+\.[0-9]{1,3}|[0-9]+) ?(?:[dD]|days?))?"
    r"(?: ?(?:[0-9]+\.[0-9]{1,3}|[0-9]+) ?(?:[hH]|hrs?|hours?))?(?: ?(?:[0-9]+\.[0-9]{1,3}|[0-9]+) ?(?:[mM]|mins?|minutes?))?"
    r"(?: ?(?:[0-9]+\.[0-9]{1,3}|[0-9]+) ?(?:[sS]|secs?|seconds?))?|[0-9]+:[0-5][0-9]:[0-5][0-9])\s*$"
)
# lablease.timeparse.CALENDAR_PATTERN: numbers with units, one of them years or months (1y, 3mo, 1 month 2 days).
CALENDAR_PATTERN = (
    r"(?i)^(?=.*[0-9.]\s*(?:ys?|yrs?|years?|mos?|mths?|months?)(?![a-z]))\s*(?:[0-9.]+\s*(?:ys?|yrs?|years?|mos?|mths?"
    r"|months?|w|wks?|weeks?|d|days?|h|hrs?|hours?|m|mins?|minutes?|s|secs?|seconds?)(?![a-z])[\s,]*)+$"
)
_KNOWN_FORM = re.compile(KNOWN_FORM_PATTERN)
_CALENDAR = re.compile(CALENDAR_PATTERN)
_NUMBER_UNIT = re.compile(r"([0-9]+(?:\.[0-9]+)?) ?([a-zA-Z])")
_UNIT_SECONDS = {"w": 604800, "d": 86400, "h": 3600, "m": 60, "s": 1}

UNLIMITED = "unlimited"
NO_FIXED_LENGTH = "years and months have no fixed length; use weeks or days"
_SUCH_AS = "must be a duration such as 4h, 30m, 2d, PT4H or 1:30:00"
_TRY = "(try 4h, 30m, 2d, 1w, 1h30m, PT4H or 1:30:00)"
_TIME_EXAMPLE = "an RFC 3339 time such as 2026-11-22T14:00:00Z"


def parse_duration(value, name="duration", allow_unlimited=False):
    """Seconds (a float) in any form the server takes, or UNLIMITED when allowed; ValueError naming
    `name` and saying what is wrong, in the server's words, otherwise."""
    if isinstance(value, bool):
        raise ValueError("%s: %s" % (name, _SUCH_AS))
    if isinstance(value, (int, float)):
        seconds = float(value)
    elif _is_text(value) and value.strip().lower() == UNLIMITED and allow_unlimited:
        return UNLIMITED
    elif _is_text(value) and value.strip():
        seconds = _text_seconds(value, name)
    else:
        raise ValueError("%s: %s" % (name, _SUCH_AS))
    return _bounded(seconds, name)


def _is_text(value):
    return isinstance(value, type(u"")) or isinstance(value, str)


def _text_seconds(value, name):
    """The seconds of a duration typed as text, refused as the server refuses it (lablease.timeparse)."""
    text = value.strip()
    if text.upper().startswith("P"):
        match = _ISO_ANY.match(text.upper())
        if not match:
            raise ValueError("%s: %r is not an ISO 8601 duration" % (name, value))
        numbers = [float((part or "0").replace(",", ".")) for part in match.groups()]
        if numbers[0] or numbers[1]:
            raise ValueError("%s: %s" % (name, NO_FIXED_LENGTH))
        seconds = sum(n * size for n, size in zip(numbers[2:], (604800, 86400, 3600, 60, 1)))
        if seconds <= MAX_SECONDS:  # a longer one is only too long, whatever its spelling
            _check_form(value, name)
        return seconds
    if _CALENDAR.fullmatch(value):
        raise ValueError("%s: %s" % (name, NO_FIXED_LENGTH))
    _check_form(value, name)
    return _seconds(text)


def _check_form(value, name):
    """Only the forms DURATION_PATTERN describes."""
    if _DURATION.fullmatch(value):
        return
    if re.search("[0-9]", value) and not re.search("[1-9]", value):
        raise ValueError("%s: must be positive" % name)
    if value.strip().isdigit() and all(c in "0123456789" for c in value.strip()):  # past the nine digits
        raise ValueError("%s: %r is out of range" % (name, value))
    if _KNOWN_FORM.fullmatch(value) and _seconds(value.strip()) > MAX_SECONDS:
        _bounded(_seconds(value.strip()), name)  # a known form, only too long: say so
    raise ValueError("%s: %r is not a duration %s" % (name, value, _TRY))


def _seconds(text):
    """The seconds of a text in DURATION_PATTERN (or in its forms, with larger numbers)."""
    if text.isdigit():
        return float(text)
    if ":" in text:
        parts = [int(part) for part in text.split(":")]
        return float(sum(part * size for part, size in zip(reversed(parts), (1, 60, 3600))))
    body = text[1:].upper().replace("T", "") if text.upper().startswith("P") else text
    return sum(float(number) * _UNIT_SECONDS[unit.lower()] for number, unit in _NUMBER_UNIT.findall(body))


def _bounded(seconds, name):
    if not math.isfinite(seconds):
        raise ValueError("%s: must be a finite duration" % name)
    if 0 < seconds < 1:  # the calendar counts whole seconds: less would round to nothing
        raise ValueError("%s: must be at least a second" % name)
    if seconds <= 0:
        raise ValueError("%s: must be positive" % name)
    if seconds > MAX_SECONDS:
        raise ValueError("%s: must be at most %d seconds (about 68 years)" % (name, MAX_SECONDS))
    return round(seconds, 6)


def utcnow():
    return datetime.now(timezone.utc)


def parse_time(value, name="time"):
    """An aware UTC datetime from RFC 3339 text (TIME_PATTERN, with a zone); ValueError otherwise."""
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValueError("%s: %r has no time zone; add Z for UTC" % (name, value))
        return value.astimezone(timezone.utc)
    if not _is_text(value):
        raise ValueError("%s: must be %s" % (name, _TIME_EXAMPLE))
    match = _TIME.fullmatch(value)
    if not match:
        raise ValueError("%s: %r is not %s" % (name, value, _TIME_EXAMPLE))
    if match.group(8) is None:
        raise ValueError("%s: %r has no time zone; add Z for UTC" % (name, value))
    year, month, day, hour, minute, second = [int(part or 0) for part in match.groups()[:6]]
    digits = match.group(8).replace(":", "")
    offset = timedelta(0)
    if digits not in ("Z", "z"):  # [+-]hh[:]mm[[:]ss] east of UTC
        sign = -1 if digits[0] == "-" else 1
        offset = sign * timedelta(hours=int(digits[1:3]), minutes=int(digits[3:5]), seconds=int(digits[5:7] or 0))
    micro = int((match.group(7) or "0").ljust(6, "0")[:6])
    try:
        moment = datetime(year, month, day, hour, minute, second, micro, tzinfo=timezone(offset))
        moment = moment.astimezone(timezone.utc)
    except ValueError:  # no such day, hour or offset
        raise ValueError("%s: %r is not %s" % (name, value, _TIME_EXAMPLE))
    except OverflowError:
        raise ValueError("%s: %r is out of range" % (name, value))
    if not EARLIEST <= moment <= LATEST:
        raise ValueError("%s: must lie between %s and %s" % (name, format_time(EARLIEST), format_time(LATEST)))
    return moment


def format_time(moment):
    """RFC 3339, UTC, to the second, with Z (2026-11-22T14:00:00Z), as every server answer writes it."""
    if moment is None:
        return None
    if moment.tzinfo is None:  # naive values are UTC throughout lablease
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.astimezone(timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")
