"""Which one action a person is offered on a system's page, or why none (pure; the page only shows it).

Beaker's system page taught it: one primary action chosen by the system's state and the viewer's rights,
and when there is nothing to do, the button disabled with the reason in words.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .permissions import Decision
from .times import format_time

EXTEND_STEPS = ("1h", "4h")  # Extend adds to the end (not "from now"); the site's maximum still bounds it


@dataclass(frozen=True)
class Action:
    kind: str  # take | extend (the holder: Extend and Return) | borrow | none
    enabled: bool
    reason: str = ""


@dataclass(frozen=True)
class Holding:
    """Who holds the system now, as the viewer may know it."""

    holder: str | None = None
    until: datetime | None = None
    mine: bool = False


def primary_action(may_reserve: Decision, may_borrow: bool, holding: Holding, lent_to: str | None) -> Action:
    if holding.mine:
        return Action("extend", True)
    if holding.holder is not None:
        until = format_time(holding.until) if holding.until else "it is returned (no end)"
        return Action("take", False, f"reserved by {holding.holder} until {until}")
    if may_reserve:
        return Action("take", True)
    if may_borrow and lent_to is None:
        return Action("borrow", True)
    return Action("take", False, may_reserve.reason)


def aborted_share(statuses: list[str]) -> float | None:
    """The share of finished recipes that were aborted (None when none finished): a health hint."""
    finished = [s for s in statuses if s in ("completed", "aborted")]
    return (finished.count("aborted") / len(finished)) if finished else None
