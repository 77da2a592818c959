"""Advance reservations (Grid Engine 6.2 style): their window, states, ACL, mail and accounting rules.

Time is always a parameter (`now`); nothing here reads a clock.
States: w waiting (granted, not started), r running, x exited (end reached),
d deleted, E error (a reserved system is unusable).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from .errors import Conflict, Invalid
from .times import START_TOLERANCE, format_human, format_time
from .windows import utc

STATES = ("w", "r", "x", "d", "E")
ACTIVE = ("w", "r", "E")  # count against max_advance_reservations
FINAL = ("x", "d")
# w -> r at its start; r -> x at its end; any active state -> E (a system became
# unusable) or d (deleted); E -> w / r when satisfied again (which one by time),
# E -> x when the end comes while in error. Nothing leaves x or d.
_NEXT = {
    "w": {"r", "E", "d"},
    "r": {"x", "E", "d"},
    "E": {"w", "r", "x", "d"},
}
_NAMES = {"w": "waiting", "r": "running", "x": "exited", "d": "deleted", "E": "error"}

MAIL_EVENTS = ("b", "e", "a")  # begin, end, abort (error) / satisfied again
NO_MAIL = "n"


def _state_name(state: str) -> str:
    name = _NAMES.get(state)
    return f"{state} ({name})" if name else repr(state)


def check_transition(current: str, new: str) -> None:
    if new not in _NEXT.get(current, ()):
        raise Conflict(f"an advance reservation cannot go from {_state_name(current)} to {_state_name(new)}")


def state_by_time(start: datetime, end: datetime, now: datetime) -> str:
    """The state the clock alone gives the window [start, end): w before, r inside, x after."""
    if now < start:
        return "w"
    if now < end:
        return "r"
    return "x"


def next_transition(state: str, start: datetime, end: datetime, now: datetime) -> datetime | None:
    """When the worker must next move the AR by time: w at its start; r and E at its end; never once final.

    Never earlier than `now`: a transition the worker is late for is due now.
    """
    if state == "w":
        due = start
    elif state in ("r", "E"):
        due = end
    else:
        return None
    return max(utc(due), utc(now))


def _as_duration(duration) -> timedelta:
    if isinstance(duration, bool) or not isinstance(duration, (timedelta, int, float)):
        raise Invalid("duration", "must be a duration (a number of seconds, h:m:s, 4h, PT4H ...)")
    if not isinstance(duration, timedelta):
        duration = timedelta(seconds=duration)
    if duration <= timedelta(0):
        raise Invalid("duration", "must be positive")
    return duration


def resolve_window(
    now: datetime,
    start: datetime | None = None,
    end: datetime | None = None,
    duration: timedelta | float | None = None,
) -> tuple[datetime, datetime]:
    """The window [start, end) of qrsub's -a (start), -e (end) and -d (duration).

    Any two, or all three when they agree exactly. As qrsub does: end and
    duration without a start start at end - duration; a duration alone starts
    now. A start up to a minute in the past is taken as now (clocks differ; the
    end stays as given), one further back is refused.
    """
    now = utc(now)
    if end is None and duration is None:
        raise Invalid("end", "give an end (qrsub -e) or a duration (qrsub -d): a start alone makes no window")
    if duration is not None:
        duration = _as_duration(duration)
    start, end = _complete(now, None if start is None else utc(start), None if end is None else utc(end), duration)
    if start < now - START_TOLERANCE:
        raise Invalid("start", f"{format_time(start)} is in the past (now is {format_time(now)})")
    if end <= now:
        raise Invalid("end", f"{format_time(end)} is in the past (now is {format_time(now)})")
    if end <= start:
        raise Invalid("end", f"{format_time(end)} must be after the start ({format_time(start)})")
    return max(start, now), end


def _complete(
    now: datetime, start: datetime | None, end: datetime | None, duration: timedelta | None
) -> tuple[datetime, datetime]:
    """The (start, end) the given two or three of start, end and duration make."""
    if end is None:
        start = now if start is None else start
        return start, start + duration
    if duration is None:
        return (now if start is None else start), end
    if start is None:
        if end - duration < now - START_TOLERANCE:
            raise Invalid("start", (
                f"end - duration = {format_time(end - duration)} is in the past (now is {format_time(now)}): "
                "give a later end or a shorter duration"))
        return end - duration, end
    if start + duration != end:
        raise Invalid("duration", (
            f"start + duration = {format_time(start + duration)}, but end is {format_time(end)}: "
            "give two of the three, or three that agree"))
    return start, end


def _acl_entries(entries) -> list:
    if isinstance(entries, str):  # qrsub -u: user,@group,...
        return entries.split(",")
    if isinstance(entries, (list, tuple)):
        return list(entries)
    raise Invalid("acl", "must be a list of user names and @group names")


def _check_acl_entry(entry) -> None:
    if not isinstance(entry, str) or not entry:
        raise Invalid("acl", f"{entry!r} is not a user name or @group name")
    if any(c.isspace() for c in entry) or "," in entry:
        raise Invalid("acl", f"{entry!r} contains a space or a comma: give one name per entry")
    name = entry[1:] if entry.startswith("@") else entry
    if not name or "@" in name:
        raise Invalid("acl", f"{entry!r} is neither a user name nor @ followed by a group name")


def check_acl(entries) -> list[str]:
    """Who may use an AR (qrsub -u): user names and @group names, each once, in the order given."""
    entries = _acl_entries(entries)
    if not entries:
        raise Invalid("acl", "name at least one user or @group (leave it out and only you may use it)")
    seen = set()
    for entry in entries:
        _check_acl_entry(entry)
        if entry in seen:
            raise Invalid("acl", f"{entry!r} is named twice")
        seen.add(entry)
    return entries


def in_acl(user_name: str, group_names: Iterable[str], acl: Iterable[str]) -> bool:
    """Whether the user is named in the ACL, or belongs to one of its @groups."""
    acl = set(acl)
    return user_name in acl or any(f"@{group}" in acl for group in group_names)


def check_mail_events(text: str | None) -> str:
    """Grid Engine's -m for an AR: any of b (begin), e (end), a (abort: error, and satisfied again), or n alone.

    Returns the flags in the order b, e, a ("" when none given, "n" for no mail).
    Commas between flags are accepted (`b,e`) and repeats ignored.
    """
    if text is None:
        return ""
    if not isinstance(text, str):
        raise Invalid("mail", "must be letters among b, e, a, or n alone (qrsub -m)")
    flags = set(text.strip().replace(",", ""))
    unknown = flags - set(MAIL_EVENTS) - {NO_MAIL}
    if unknown:
        raise Invalid("mail", (
            f"{text!r}: unknown flag {''.join(sorted(unknown))!r}; use b (begin), e (end), a (abort/error) "
            "or n (no mail)"))
    if NO_MAIL in flags:
        if len(flags) > 1:
            raise Invalid("mail", f"{text!r}: n (no mail) cannot be combined with b, e or a")
        return NO_MAIL
    return "".join(flag for flag in MAIL_EVENTS if flag in flags)


def wants_mail(events: str | None, kind: str) -> bool:
    """Whether mail is sent at `kind`: b (begin), e (end) or a (error / satisfied again)."""
    if kind not in MAIL_EVENTS:
        raise ValueError(f"mail kind must be one of {MAIL_EVENTS}, not {kind!r}")
    return kind in (events or "")


def check_error_handling(value) -> str:
    """hard or soft (the default); Grid Engine's -he yes means hard, no means soft."""
    if value is None:
        return "soft"
    if isinstance(value, bool):  # YAML turns yes/no into booleans
        return "hard" if value else "soft"
    word = value.strip().lower() if isinstance(value, str) else None
    if word in ("hard", "yes"):
        return "hard"
    if word in ("soft", "no"):
        return "soft"
    raise Invalid("error_handling", f"{value!r} is not hard or soft (or qrsub -he yes / no)")


def bound_runtime_problem(
    now: datetime, start: datetime, end: datetime, offset: timedelta, runtime: timedelta | None
) -> str | None:
    """Why a job bound to the AR cannot fit in it, or None when it fits.

    A bound job must end by the AR's end minus the duration offset: it starts
    at the AR's start, or now once the AR has begun.
    """
    if runtime is None:
        return "a job bound to an advance reservation needs a runtime limit"
    deadline = end - offset
    usable = deadline - start
    if runtime > usable:
        return (f"its runtime limit of {format_human(runtime)} is longer than the advance reservation's "
                f"{format_human(end - start)} minus the duration offset of {format_human(offset)} ({format_human(usable)})")
    begin, when = (now, "started now") if now > start else (start, "started at the reservation's start")
    if begin + runtime > deadline:
        return (f"its runtime limit of {format_human(runtime)} would not end by {format_time(deadline)} "
                f"(the advance reservation's end minus the duration offset) if {when}, at {format_time(begin)}: "
                f"{format_human(max(deadline - begin, timedelta(0)))} are left")
    return None


def bound_wait(ar_id: int, state: str, start: datetime, error_handling: str) -> str | None:
    """Why work bound to an AR waits for the AR itself (None: the AR lets it run, when systems are free)."""
    if state == "w":
        return f"waits for advance reservation {ar_id}, which starts at {format_time(start)}"
    if state == "E" and error_handling == "hard":
        return f"waits for advance reservation {ar_id}, which is in error (hard error handling: nothing runs in it)"
    return None


def reserved_seconds(start: datetime, end: datetime, now: datetime, systems: int) -> float:
    """System-time reserved so far: systems x the part of [start, end) already past."""
    elapsed = (min(now, end) - start).total_seconds()
    return systems * max(0.0, elapsed)


def overlap_seconds(intervals: Iterable[tuple[datetime, datetime | None]], start: datetime, end: datetime) -> float:
    """The sum of the parts of the intervals [a, b) inside [start, end).

    Overlapping intervals each count (two jobs on two systems use twice the
    time). b None is open: it runs to `end`; callers pass now for work still running.
    """
    total = 0.0
    for a, b in intervals:
        upper = end if b is None else min(b, end)
        total += max(0.0, (upper - max(a, start)).total_seconds())
    return total


# --- eligibility and protection -------------------------------------------------------------------

USABLE_CONDITIONS = ("automated", "manual")
# Problems an operator causes on purpose (refused unless forced); the others just happen (into E).
FORESEEABLE = ("removed", "pool", "acl")


@dataclass(frozen=True)
class SystemFacts:
    """What the rules need to know of a system, as the service read it."""

    fqdn: str
    condition: str
    lab: str | None
    pools: frozenset = frozenset()
    locked_out: tuple = ()  # ACL users who may not use it
    granted_lab: str | None = None  # for a held system: its lab when the AR was granted


def ineligible(system: SystemFacts, requirement: tuple[bool, str | None], pools: list[str]) -> str | None:
    """Why a system cannot be granted (the calendar aside), or None: its condition, the requirements,
    the pools asked for, and every ACL user being able to use it."""
    if system.condition not in USABLE_CONDITIONS:
        return system.condition
    matches, why = requirement
    if not matches:
        return why
    if pools and not system.pools & set(pools):
        return "not in the pools asked for"
    if system.locked_out:
        return "an ACL user may not use it"
    return None


def problems(held: list[SystemFacts], pools: list[str]) -> list[tuple[str, str]]:
    """Why a granted AR cannot be satisfied now, as (kind, text) per held system."""
    found = []
    for system in held:
        if system.condition not in USABLE_CONDITIONS:
            kind = "removed" if system.condition == "removed" else "broken"
            found.append((kind, f"{system.fqdn} is {system.condition}"))
            continue
        if (system.lab or None) != (system.granted_lab or None):
            found.append(("lab", f"{system.fqdn} left lab {system.granted_lab or '(none)'}"))
        if pools and not system.pools & set(pools):
            found.append(("pool", f"{system.fqdn} is no longer in pool(s) {', '.join(pools)}"))
        if system.locked_out:
            found.append(("acl", f"{', '.join(system.locked_out)} may no longer use {system.fqdn}"))
    return found


def breaks_on_purpose(found: list[tuple[str, str]], known: list[str]) -> list[str]:
    """The new problems a change made on purpose would cause: refused unless forced."""
    return [text for kind, text in found if kind in FORESEEABLE and text not in known]
