"""Reservation rules: the window a request asks for, changes to its end, its state.

Time is always a parameter (`now`); nothing here reads a clock.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from .errors import Invalid
from .returns import EXPIRY_REASONS
from .times import START_TOLERANCE, format_human, format_time
from .windows import Window, bounded_instant, utc

UNLIMITED = "unlimited"


@dataclass(frozen=True)
class ReservationPolicy:
    """The site's settings for manual reservations."""

    default_duration: timedelta = timedelta(hours=24)
    max_duration: timedelta | None = None
    allow_unlimited: bool = False


def plan_window(
    now: datetime,
    policy: ReservationPolicy,
    start: datetime | None = None,
    end: datetime | None = None,
    duration: timedelta | str | None = None,
    loan_end: datetime | None = None,
) -> Window:
    """The window [start, end) a reservation request asks for, with the site's rules applied.

    loan_end is the end of the caller's limited loan of the system: the
    reservation defaults to it and may not pass it.
    """
    start = _start(now, start)
    asked = "end" if end is not None else "duration"  # the field a refusal names: what the request sent
    if end is not None and duration is not None:
        raise Invalid("duration", "give either end or duration, not both")
    if duration == UNLIMITED:
        if not policy.allow_unlimited:
            raise Invalid("duration", "unlimited reservations are not allowed on this site")
        if loan_end is not None:
            raise Invalid("duration", f"cannot be unlimited: your loan of this system ends at {format_time(loan_end)}")
        if policy.max_duration is not None:
            raise Invalid("duration", f"cannot be unlimited: this site's maximum is {format_human(policy.max_duration)}")
        return Window(start, None)
    if isinstance(duration, timedelta):
        if duration <= timedelta(0):
            raise Invalid("duration", "must be positive")
        end = start + duration
    if end is None:
        end = loan_end if loan_end is not None else start + policy.default_duration
    end = utc(end)
    if end <= start:
        raise Invalid("end", "must be after start")
    _check_limits(policy, start, end, loan_end, asked)
    return Window(start, end)


def _start(now: datetime, start: datetime | None) -> datetime:
    if start is None:
        return now
    start = utc(start)
    if start < now - START_TOLERANCE:
        raise Invalid("start", "is in the past")
    return max(start, now)


def _check_limits(policy: ReservationPolicy, start: datetime, end: datetime, loan_end: datetime | None,
                  field: str) -> None:
    """The site's maximum and the caller's loan; `field` is what the request sent (duration, end, extend_by)."""
    if policy.max_duration is not None and end - start > policy.max_duration:
        latest = format_time(start + policy.max_duration)
        raise Invalid(field, f"would make the reservation longer than this site's maximum of "
                             f"{format_human(policy.max_duration)} (it may end at {latest} at the latest)")
    if loan_end is not None and end > loan_end:
        raise Invalid(field, f"would end the reservation past the end of your loan of this system "
                             f"({format_time(loan_end)})")



def check_length(policy: ReservationPolicy, length: timedelta, field: str) -> None:
    """A reservation asked for ahead of time (a recipe's reservesys) may not pass the site's maximum."""
    if policy.max_duration is not None and length > policy.max_duration:
        raise Invalid(field, f"{format_human(length)} is longer than this site's maximum reservation of "
                             f"{format_human(policy.max_duration)}")


def kept_end(policy: ReservationPolicy, now: datetime, asked: timedelta, loan_end: datetime | None = None,
             next_booking: datetime | None = None) -> tuple[datetime, str | None]:
    """Until when a finished recipe's system is kept for its owner (reservesys), and what shortened it.

    What it asked, within the site's maximum as it is now (the site may have lowered it
    after the job was accepted: the recipe has run, so the system is kept for the new
    maximum rather than not at all), the owner's limited loan, and the next booking.
    """
    end, why = now + asked, None
    if policy.max_duration is not None and asked > policy.max_duration:
        end, why = now + policy.max_duration, f"this site's maximum of {format_human(policy.max_duration)}"
    if loan_end is not None and loan_end < end:
        end, why = max(loan_end, now), f"the end of the owner's loan ({format_time(loan_end)})"
    if next_booking is not None and next_booking < end:
        end, why = next_booking, f"the next booking ({format_time(next_booking)})"
    return end, why


def plan_new_end(
    now: datetime,
    policy: ReservationPolicy,
    window: Window,
    end: datetime | None = None,
    extend_by: timedelta | None = None,
    loan_end: datetime | None = None,
) -> datetime:
    """The new end of a reservation: `end` sets it, `extend_by` adds to the current end.

    `extend_by` adds to the current end rather than to now, so two extensions of
    an hour add two hours whenever they are sent.
    """
    if (end is None) == (extend_by is None):
        raise Invalid("end", "give exactly one of end or extend_by")
    if extend_by is not None:
        if window.end is None:
            raise Invalid("extend_by", "the reservation has no end to extend")
        if extend_by <= timedelta(0):
            raise Invalid("extend_by", "must be positive")
        end = window.end + extend_by
    end = bounded_instant(utc(end), "end" if extend_by is None else "extend_by")
    if end <= now:
        raise Invalid("end", "must be in the future (return the reservation to end it now)")
    if end <= window.start:
        raise Invalid("end", "must be after the reservation's start")
    _check_limits(policy, window.start, end, loan_end, "extend_by" if extend_by is not None else "end")
    return end


def due_at(end: datetime | None, heartbeat: timedelta | None, last_heartbeat: datetime | None) -> datetime | None:
    """When the worker must return the reservation: its end, or a missed heartbeat."""
    deadlines = [d for d in (end, last_heartbeat + heartbeat if heartbeat and last_heartbeat else None) if d]
    return min(deadlines) if deadlines else None


def state(start: datetime, returned_at: datetime | None, return_reason: str | None, now: datetime) -> str:
    """active, upcoming (starts later), returned (by a person) or expired (by the worker)."""
    if returned_at is not None:
        return "expired" if return_reason in EXPIRY_REASONS else "returned"
    return "upcoming" if start > now else "active"


def heartbeat_interval(value: timedelta) -> timedelta:
    if value < timedelta(seconds=10):
        raise Invalid("heartbeat", "must be at least 10 seconds")
    return value
