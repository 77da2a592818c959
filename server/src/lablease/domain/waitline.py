"""The waiting line for people: rules of a reservation that waits for a system.

A reservation asked with `wait` joins the scheduler's queue (the same order as recipes:
priority, then age) and is granted by the scheduler when a system it may use frees up.
These are its pure rules: what it waits for, how long it will hold the system once
granted, when it is returned if nobody takes it, and an honest estimate of its start.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from .errors import Conflict, Invalid
from .recipes import PRIORITIES, priority_value
from .windows import Window

MIN_TAKE_BY = timedelta(seconds=10)
WAIT_ONLY = ("requires", "pools", "priority", "take_by")
NOT_WITH_WAIT = ("start", "end", "advance_reservation")


def check_fields(given, wait: bool) -> None:
    """Fields of a waiting reservation only with `wait`; a fixed start or end never with it."""
    for name in (NOT_WITH_WAIT if wait else WAIT_ONLY):
        if name in given:
            raise Invalid(name, "a reservation that waits starts when it is granted: give duration, not start or end"
                          if wait else "is only for a reservation that waits (wait: true)")


@dataclass(frozen=True)
class Wanted:
    """What the waiting reservation may get: one named system (`force`), or any system the filter matches."""

    force: str | None
    tree: dict | None


def wanted(system: str | None, requires: dict | None, pools: list[str]) -> Wanted:
    """A named system, or a filter (`requires`, a hostRequires tree) and/or pools (any of them)."""
    if system and (requires is not None or pools):
        raise Invalid("system", "give either a system or requires/pools to wait for, not both")
    if system:
        return Wanted(system, None)
    if requires is None and not pools:
        raise Invalid("system", "give the system to reserve, or requires/pools to wait for any matching system")
    in_pools = [{"or": [{"field": "pool", "op": "=", "value": name} for name in pools]}] if pools else []
    parts = ([requires] if requires is not None else []) + in_pools
    return Wanted(None, parts[0] if len(parts) == 1 else {"and": parts})


def priority(name: str | None) -> int:
    if name is None:
        return priority_value("Normal")
    if name not in PRIORITIES:
        raise Invalid("priority", f"must be one of {', '.join(PRIORITIES)}")
    return priority_value(name)


def check_take_by(take_by: timedelta | None, length: timedelta | None) -> timedelta | None:
    """take_by: how long the holder has to confirm (heartbeat or PATCH) once it is granted."""
    if take_by is None:
        return None
    if take_by < MIN_TAKE_BY:
        raise Invalid("take_by", "must be at least 10 seconds")
    if length is not None and take_by >= length:
        raise Invalid("take_by", "must be shorter than the reservation")
    return take_by


def grant_window(now: datetime, length: timedelta | None) -> Window:
    """The duration counts from the grant, not from the request."""
    return Window(now, now + length if length is not None else None)


def take_by_deadline(granted_at: datetime, take_by: timedelta | None, confirmed: bool) -> datetime | None:
    """Until confirmed, the reservation is returned at granted_at + take_by."""
    if take_by is None or confirmed:
        return None
    return granted_at + take_by


def due(deadlines: list[datetime | None]) -> datetime | None:
    known = [d for d in deadlines if d is not None]
    return min(known) if known else None


def estimated_start(position: int, ends: list[datetime | None], now: datetime) -> datetime | None:
    """When the `position`-th in line might start: the position-th earliest end of the bookings holding its
    candidate systems now (the calendar's ends; a heartbeat or an early return can free one sooner).

    Unknown (None) when fewer bookings end than there are waiting ahead, e.g. open-ended holders: a
    guess beyond that would depend on how long those ahead keep the systems.
    """
    known = sorted(end for end in ends if end is not None)
    if position < 1 or position > len(known):
        return None
    return max(known[position - 1], now)



def never_granted(by_condition: dict[str, int]) -> Conflict:
    """A wait none of whose candidates its owner could ever be granted, as things stand: refused at once
    (409), as reserving one of them by name is, instead of waiting for ever. `by_condition`: how many of
    the systems matching it (that its owner may reserve by policy) are in each condition; none of them is
    Manual, nor Automated and lent to the owner."""
    if not by_condition:
        return Conflict("no system you may reserve matches: it would wait for ever")
    parts = []
    if by_condition.get("automated"):
        parts.append(f"{by_condition['automated']} Automated (given out by the scheduler to jobs: only a user "
                     "one is lent to may reserve it by hand)")
    if by_condition.get("broken"):
        parts.append(f"{by_condition['broken']} broken (ask an administrator to repair one)")
    return Conflict("no system it could be granted matches, so it would wait for ever: of the systems matching, "
                    + " and ".join(parts) + "; submit a job for Automated systems, or wait for a Manual one",
                    matching=dict(by_condition))
