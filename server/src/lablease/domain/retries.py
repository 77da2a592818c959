"""Idempotent retries: a request_id seen before must come with the same request.

A client that never got the answer to its reserve or job submission sends it
again with the same request_id and gets what the first one made. A request
that differs is not a retry but a mistake (a reused id): it is refused, naming
what differs, rather than silently answered with something the caller did not
ask for. Time is a parameter; nothing here reads a clock.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta

from .errors import Conflict, format_path
from .recipes import PRIORITIES
from .reservations import UNLIMITED
from .times import format_human, format_time
from .windows import utc

MAX_NAMED = 5  # differences named in one answer


@dataclass(frozen=True)
class ReserveAsked:
    """What a reserve request asked for (None: not given)."""

    system: str
    start: datetime | None = None
    end: datetime | None = None
    duration: timedelta | str | None = None
    return_loan: bool = False
    heartbeat: timedelta | None = None
    advance_reservation: int | None = None


@dataclass(frozen=True)
class ReserveMade:
    """The reservation the first request made, as it is now."""

    system: str
    created_at: datetime
    start: datetime
    end: datetime | None
    return_loan: bool
    heartbeat: timedelta | None
    advance_reservation: int | None
    returned: bool = False


def _differs(found: list[str], name: str, first, again) -> None:
    """One difference in words: "heartbeat (first none, now 10m)" — a value not asked is "none", never None."""
    if first != again:
        found.append(f"{name} (first {_said(first)}, now {_said(again)})")


def _said(value) -> str:
    if value is None:
        return "none"
    return str(value).lower() if isinstance(value, bool) else str(value)


def _or_no_end(moment: datetime | None) -> str:
    return format_time(moment) or "no end"


def reserve_differences(asked: ReserveAsked, made: ReserveMade) -> list[str]:
    """What the retry asks differently from the reservation made, e.g. "system (first a, now b)".

    A start left out means "now", which the first request also meant if it left it out;
    an end and duration both left out mean the site's default, whatever the first one got.
    A returned reservation's end is when it was returned, no longer what was asked: only
    the rest is compared (the answer says it was returned). An open one is compared as it is
    now, so a retry asking for less than an extension since gave it is a different request.
    """
    found = []

    def differs(name: str, first, again) -> None:
        _differs(found, name, first, again)

    differs("system", made.system, asked.system.lower())
    # A start a little in the past (or none) became the moment the first request was made.
    differs("start", _or_no_end(made.start), _or_no_end(max(utc(asked.start or made.created_at), made.created_at)))
    if made.returned:
        pass
    elif asked.end is not None:
        differs("end", _or_no_end(made.end), _or_no_end(utc(asked.end)))
    elif asked.duration == UNLIMITED:
        differs("duration", "limited" if made.end else UNLIMITED, UNLIMITED)
    elif asked.duration is not None:
        differs("duration", format_human(made.end - made.start) if made.end else UNLIMITED,
                format_human(asked.duration))
    differs("return_loan", made.return_loan, asked.return_loan)
    differs("heartbeat", *(format_human(h) if h else None for h in (made.heartbeat, asked.heartbeat)))
    differs("advance_reservation", made.advance_reservation, asked.advance_reservation)
    return found


@dataclass(frozen=True)
class WaitAsked:
    """What a reservation that waits asked for: by the retry, or (read back) by the first request.

    `system` or `tree` is what it waits for (a named system, or a hostRequires filter with its pools);
    `length` None is unlimited, and is not compared when the retry left the duration out (the site's
    default, whatever the first one got: as for a reserve)."""

    system: str | None
    tree: dict | None
    length: timedelta | None
    heartbeat: timedelta | None
    take_by: timedelta | None
    healthy_within: timedelta | None
    priority: int
    return_loan: bool
    length_given: bool = True


def wait_differences(asked: WaitAsked, made: WaitAsked) -> list[str]:
    """What a retry of a reservation that waits asks differently from the first request, as
    reserve_differences says it: the same rule whether the first one is still waiting or was granted."""
    found = []

    def differs(name: str, first, again) -> None:
        _differs(found, name, first, again)

    def human(value: timedelta | None, none: str | None = None):
        return format_human(value) if value is not None else none

    differs("system", (made.system or "").lower() or None, (asked.system or "").lower() or None)
    differs("requires", *(json.dumps(t, sort_keys=True) if t is not None else None for t in (made.tree, asked.tree)))
    if asked.length_given:
        differs("duration", human(made.length, UNLIMITED), human(asked.length, UNLIMITED))
    differs("heartbeat", human(made.heartbeat), human(asked.heartbeat))
    differs("take_by", human(made.take_by), human(asked.take_by))
    differs("healthy_within", human(made.healthy_within), human(asked.healthy_within))
    differs("priority", PRIORITIES[made.priority], PRIORITIES[asked.priority])
    differs("return_loan", made.return_loan, asked.return_loan)
    return found


def wait_mode_differs(first_waited: bool) -> list[str]:
    """A request_id of a request that waited, reused by one that does not (or the other way round)."""
    return [f"wait (first {str(first_waited).lower()}, now {str(not first_waited).lower()})"]


def document_differences(first, again, path: tuple = ()) -> list[str]:
    """The places (as recipe_sets[0].recipes[1].force) where two JSON documents differ, in order."""
    if isinstance(first, dict) and isinstance(again, dict):
        found = []
        for key in sorted(set(first) | set(again), key=str):
            found += document_differences(first.get(key), again.get(key), path + (key,))
        return found
    if isinstance(first, list) and isinstance(again, list) and len(first) == len(again):
        return [place for i, (a, b) in enumerate(zip(first, again)) for place in document_differences(a, b, path + (i,))]
    return [] if first == again else [format_path(path)]


def refuse_changed_retry(request_id: str, made: str, differences: list[str]) -> None:
    """A reused request_id with a different request: 409 naming what differs."""
    if differences:
        shown = differences[:MAX_NAMED] + ([f"{len(differences) - MAX_NAMED} more"]
                                           if len(differences) > MAX_NAMED else [])
        raise Conflict(f"request_id {request_id!r} was already used for {made}, which differs in "
                       f"{'; '.join(shown)}: use a new request_id for a different request",
                       differs=differences)
