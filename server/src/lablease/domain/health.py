"""System health: when a health check is due, which check applies, what a check's end means.

A system's health is separate from its condition: `unknown` (never checked, or the last check was
cancelled), `checking` (a check job is queued or runs), `good` (the last check passed), `bad` (the
last check failed; an Automated system is then also made Broken). Pure rules, no clock: `now` is passed.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from .errors import Invalid

HEALTHS = ("unknown", "good", "bad", "checking")
SCOPES = ("system", "pool", "arch")  # most specific first: a system's own check wins over its pool's
PASSING = ("pass", "warn")  # a warning is no failure of the system


@dataclass(frozen=True)
class Cadence:
    """How often a check runs: every `every` since the last one, and/or after `after_recipes` recipes.
    Neither: only when forced (back from broken, a failed install) or asked for (healthy_within)."""

    every: timedelta | None = None
    after_recipes: int | None = None


@dataclass(frozen=True)
class Standing:
    """What the due rule needs to know of one system."""

    condition: str
    checking: bool  # a check job is queued or running
    forced: bool  # back from broken, after a failed install, or asked for
    last_check_at: datetime | None
    recipes_since: int  # recipes finished on it since the last check


def check_cadence(every: timedelta | None, after_recipes: int | None) -> Cadence:
    if every is not None and every <= timedelta(0):
        raise Invalid("every", "must be a positive duration")
    if after_recipes is not None and after_recipes < 1:
        raise Invalid("after_recipes", "must be at least 1")
    return Cadence(every, after_recipes)


def check_scope(scope: dict) -> tuple[str, str]:
    """Exactly one of system, pool or arch names what the check applies to."""
    given = [key for key in SCOPES if scope.get(key)]
    if len(given) != 1:
        raise Invalid("scope", "give exactly one of system, pool or arch")
    return given[0], str(scope[given[0]])


def next_check_at(standing: Standing, cadence: Cadence | None, now: datetime) -> datetime | None:
    """When the system's next check becomes due; None: not while nothing applies or one already runs.

    Checks run on Automated systems only (the scheduler gives them out); a forced check, or enough
    recipes since the last one, is due at once; otherwise `every` after the last (at once if never).
    """
    if cadence is None or standing.checking or standing.condition != "automated":
        return None
    if standing.forced:
        return now
    if cadence.after_recipes is not None and standing.recipes_since >= cadence.after_recipes:
        return now
    if cadence.every is not None:
        return now if standing.last_check_at is None else max(now, standing.last_check_at + cadence.every)
    return None


def applicable(checks: list[tuple[str, str, object]], fqdn: str, pools: list[str], arch: str):
    """The check (scope, target, value) that applies to a system: its own, else its pools' (first by
    pool name), else its arch's; None when no check applies."""
    wanted = {"system": [fqdn], "pool": sorted(pools), "arch": [arch]}
    for scope in SCOPES:
        for target in wanted[scope]:
            for check_scope_, check_target, value in checks:
                if check_scope_ == scope and check_target == target:
                    return value
    return None


def passed(status: str, result: str | None) -> bool | None:
    """A finished check recipe: True passed, False failed, None says nothing (cancelled)."""
    if status == "cancelled":
        return None
    return status == "completed" and (result or "pass") in PASSING


def failure_reason(name: str, status: str, result: str | None, tasks: list[dict], why: str | None = None) -> str:
    """The reason a failed check gives: which check, how it ended and its failing tasks."""
    failing = [t.get("name", "?") for t in tasks or () if t.get("result") not in PASSING]
    text = f"health check {name} {status}" + (f" with result {result}" if result and status == "completed" else "")
    if why:
        text += f": {why}"
    if failing:
        text += f" (failing tasks: {', '.join(failing)})"
    return text


def recent(state: str, passed_at: datetime | None, within: timedelta, now: datetime) -> bool:
    """healthy_within: the system is good and its last pass is no older than `within`."""
    return state == "good" and passed_at is not None and passed_at >= now - within
