"""Why a recipe waits, in words: a category, a sentence, and what its owner can do about it.

The scheduler's explanation (scheduler/planner.py `explain`) counts the systems each filter
ruled out and names the busy candidates; this turns it into the one reason a person acts
on. The order of the checks is the order in which the obstacles have to go: an advance
reservation that has not started blocks everything; a set holding part of its systems
waits for the rest; with no candidate at all nothing will ever free up; otherwise it waits
for busy candidates or for the recipes ahead of it.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from .permissions import LENT_TO_ANOTHER
from .times import format_time

BROKEN = "the system is broken, not automated"
# The queue counts the systems off a recipe's candidate list under this one reason (services/queue/waiting.py
# Summaries); the recipe's own page counts each reason apart.
NOT_CANDIDATE = "outside its host requirements or its owner's access"
CATEGORIES = ("advance-reservation", "holding", "no-match", "broken", "lent", "live", "busy", "behind", "peers")


@dataclass(frozen=True)
class Reason:
    category: str
    sentence: str
    action: str

    def as_dict(self) -> dict:
        return {"category": self.category, "sentence": self.sentence, "action": self.action}


@dataclass(frozen=True)
class Facts:
    """What is known about one waiting recipe (all counts over the systems the server has)."""

    candidates: int                          # systems it may run on, busy or not
    ruled_out: dict[str, int]                # reason -> systems ruled out for it
    busy: list[tuple[str, datetime | None]]  # candidates booked now: fqdn, until (None: open-ended)
    ahead: int = 0                           # waiting recipe sets before it in the queue
    holding: str | None = None               # the system it holds while its set waits
    ar_wait: str | None = None               # advance_rules.bound_wait's sentence, if its AR holds it back
    live: int = 0                            # systems ruled out only by who holds them or is lent them now
    pinned: str | None = None                # the one system it asks for (pinned_system), if it names one
    free_now: int = 0                        # no runtime limit: busy candidates free now but booked later...
    booked_from: datetime | None = None      # ...and the first start of those bookings


def pinned_system(force: str | None, tree: dict | None) -> str | None:
    """The one system a recipe asks for: a forced one (a health check's), or `hostname = X` among the
    requirements it must all meet. Widening the requirements is no advice to such a recipe."""
    if force:
        return force
    leaves = [tree] if tree and "field" in tree else (tree or {}).get("and", [])
    named = [leaf["value"] for leaf in leaves if leaf.get("field") == "hostname" and leaf.get("op") == "="
             and "%" not in str(leaf.get("value"))]
    return named[0] if named else None


def reason(facts: Facts) -> Reason:
    if facts.ar_wait:
        return Reason("advance-reservation", facts.ar_wait[0].upper() + facts.ar_wait[1:] + ".",
                      "Wait for the advance reservation to start, or resubmit the job without it.")
    if facts.holding:
        return Reason("holding", f"Holds {facts.holding} until the other recipes of its set get systems.",
                      "Nothing to do: it starts as soon as its multi-host peers have systems.")
    if not facts.candidates:
        return _never(facts.ruled_out, facts.live, facts.pinned)
    free = facts.candidates - len(facts.busy)
    if not free:
        return _busy(facts)
    if facts.ahead:
        return Reason("behind", f"{facts.ahead} recipe set(s) ahead of it in the queue come first; "
                                f"{free} candidate system(s) are free.",
                      "Wait, or submit with a higher priority.")
    return Reason("peers", f"{free} candidate system(s) are free; it waits for the other recipes of its set.",
                  "Wait: the set starts when every recipe in it has a system.")


def _busy(facts: Facts) -> Reason:
    """Every candidate is booked: wait for the first to free up, unless a runtime limit would let it start now."""
    if facts.booked_from is not None:  # docs/scheduler.md: no runtime limit, never before a booking ahead
        since = format_time(facts.booked_from)
        return Reason("busy", f"{facts.free_now} candidate system(s) are free now but booked from {since}, and "
                              "a recipe without a runtime limit never starts on a system with a booking ahead.",
                      f"Give it a runtime_limit that ends before {since} (resubmit the job with one), "
                      "or wait until that booking is over.")
    first = min((until for _, until in facts.busy if until), default=None)
    if facts.pinned:
        when = f"until {format_time(first)}" if first else "with no end set"
        return Reason("busy", f"{facts.pinned}, the one system it asks for, is busy {when}.",
                      f"Wait for {facts.pinned}: it runs on no other system.")
    when = f"the first frees up at {format_time(first)}" if first else "none has an end set"
    return Reason("busy", f"All {facts.candidates} candidate system(s) are busy; {when}.",
                  "Wait, or widen the host requirements so that more systems qualify.")


def _never(ruled_out: dict[str, int], live: int = 0, pinned: str | None = None) -> Reason:
    """No candidate at all: say which obstacle stands in the way."""
    if ruled_out.get(BROKEN):
        return Reason("broken", f"Every system that matches is broken ({ruled_out[BROKEN]} system(s)).",
                      f"Ask an administrator to repair {pinned}: it runs on no other system." if pinned else
                      "Ask an administrator to repair one, or widen the host requirements.")
    if ruled_out.get(LENT_TO_ANOTHER):
        return Reason("lent", f"The systems that could run it are lent to someone else "
                              f"({ruled_out[LENT_TO_ANOTHER]} system(s)).",
                      "Wait for the loan to end, or ask its holder to return it.")
    top = sorted(ruled_out.items(), key=lambda item: (-item[1], item[0]))[:3]
    said = "; ".join(f"{count} system(s): {why}" for why, count in top) or "the server has no systems"
    if live:  # <user>/<loaned> rule them out now; that changes with reservations and loans
        return Reason("live", f"No system suits it now ({said}); {live} system(s) may once who holds "
                              f"them or who they are lent to changes.",
                      "Wait for that reservation or loan to change, or change the host requirements.")
    return Reason("no-match", f"No system can ever run it ({said}).",
                  "Change the host requirements (or ask for access to matching systems), or cancel the job.")
