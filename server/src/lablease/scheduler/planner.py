"""Recipe-set placement: all or nothing, in autopick preference order.

`place(needs, is_free)` matches every recipe of a set to a distinct free
candidate system (augmenting paths, so one recipe's choice never blocks
another's needlessly) or returns None: a set never starts with part of its
systems, which is what rules out ABBA deadlocks between multi-host sets.
`place_partial` is the same matching without the all-or-nothing rule, for
the one blocked set allowed to hold systems while it waits.
"""
from __future__ import annotations

import heapq
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Callable, Iterable, Iterator

from ..domain.permissions import LENT_TO_ANOTHER
from ..domain.times import format_time
from ..domain.windows import Window
from .filters import Host, possible, verdict


@dataclass(frozen=True)
class Need:
    """One recipe's demand: candidate systems in preference order, and how long it runs."""

    recipe_id: int
    candidates: tuple[int, ...]
    runtime: timedelta | None = None
    held: int | None = None  # a system this recipe already holds


FreeCheck = Callable[[int, "timedelta | None"], bool]


def _match(needs: list[Need], is_free: FreeCheck, current: dict[int, int] | None = None) -> dict[int, int]:
    """Maximum matching recipe -> system, trying candidates in preference order.

    `current`: a matching to start from (recipe -> system; an entry the recipe can no longer use is
    dropped). Augmenting paths only add systems to a matching, so every system of `current` stays in the
    result, dealt to the same recipe or another.
    """
    owner: dict[int, int] = {}  # system -> recipe
    chosen: dict[int, int] = {}  # recipe -> system
    by_id = {need.recipe_id: need for need in needs}
    for need in needs:
        if need.held is not None:
            owner[need.held], chosen[need.recipe_id] = need.recipe_id, need.held

    def free_candidates(need: Need) -> list[int]:
        return [s for s in need.candidates if is_free(s, need.runtime)]

    options = {need.recipe_id: free_candidates(need) for need in needs if need.held is None}
    for recipe_id, system in (current or {}).items():
        if system in options.get(recipe_id, ()) and system not in owner:
            owner[system], chosen[recipe_id] = recipe_id, system

    def augment(recipe_id: int, seen: set[int]) -> bool:
        for system in options[recipe_id]:
            if system in seen:
                continue
            seen.add(system)
            other = owner.get(system)
            if other is None or (by_id[other].held is None and augment(other, seen)):
                owner[system], chosen[recipe_id] = recipe_id, system
                return True
        return False

    # Recipes with the fewest options choose first: they are the hardest to satisfy.
    for recipe_id in sorted(options, key=lambda r: len(options[r])):
        if recipe_id not in chosen:
            augment(recipe_id, set())
    return chosen


def place(needs: Iterable[Need], is_free: FreeCheck) -> dict[int, int] | None:
    """Every recipe -> a distinct free system, or None when the set cannot start whole."""
    needs = list(needs)
    chosen = _match(needs, is_free)
    return chosen if len(chosen) == len(needs) else None


def place_partial(needs: Iterable[Need], is_free: FreeCheck, current: dict[int, int] | None = None) -> dict[int, int]:
    """As many recipes as can be matched; from `current` (what the set holds), every system of it kept:
    a freed system is taken only when it lets one more recipe hold, never in exchange for a held one."""
    return _match(list(needs), is_free, current)


def run_window(now: datetime, runtime: timedelta | None) -> Window:
    """What a recipe starting now would hold: open-ended without a runtime limit (it might never end), so
    only a system with no later booking is free for it; with one, a later booking that starts after it
    ends leaves the system free (backfill)."""
    return Window(now, now + runtime if runtime else None)


def queue_key(priority: int, queued_at: datetime, recipe_id: int) -> tuple:
    """Scheduling order: higher priority first, then the longer waiting, then the lower id (stable ties)."""
    return (-priority, queued_at, recipe_id)


def offer_order(holding: int | None, queues: Iterable[Iterable[tuple]]) -> Iterator[int]:
    """Recipe-set ids to offer a freed system to, best first, each once.

    holding: the set that holds systems while it waits (offered first: it keeps large sets from starving);
    queues: each requirement class's queued recipes as (*queue_key, set id), in that order; a set whose
    recipes sit in several classes comes at its best place.
    """
    offered: set[int] = set()
    if holding is not None:
        offered.add(holding)
        yield holding
    for *_, set_id in heapq.merge(*queues):
        if set_id not in offered:
            offered.add(set_id)
            yield set_id


def tier(host: Host, pools: list[str]) -> int:
    """autopick: 0 for the first preferred pool, 1 for the second, ..., len(pools) for any other system."""
    return next((i for i, pool in enumerate(pools) if pool in host.pools), len(pools))


def shuffled_within_tiers(ranked: Iterable[tuple[int, int]], rng: random.Random) -> list[int]:
    """(system id, tier) pairs, best tier first, in random order within each tier (autopick random="true").

    The caller gives the randomness (the planner holds no hidden state), so a test can fix it."""
    tiers: dict[int, list[int]] = {}
    for system_id, rank in ranked:
        tiers.setdefault(rank, []).append(system_id)
    ordered: list[int] = []
    for rank in sorted(tiers):
        rng.shuffle(tiers[rank])
        ordered += tiers[rank]
    return ordered



Usable = Callable[[Host], "tuple[bool, str | None]"]


def candidates(tree: dict | None, hosts: Iterable[Host], usable: Usable, force: str | None = None) -> list[Host]:
    """Systems a recipe could ever run on: its requirements (live leaves unknown: they are checked when the
    recipe is placed), and the owner's right to use them."""
    found = []
    for host in hosts:
        if force is not None and host.fqdn != force:
            continue
        if possible(tree, host) and usable(host)[0]:
            found.append(host)
    return found


@dataclass
class Explanation:
    """Why a recipe waits: systems ruled out per reason, and when busy candidates free up."""

    total: int = 0
    ruled_out: dict[str, int] = field(default_factory=dict)
    candidates: int = 0
    busy: list[tuple[str, datetime | None]] = field(default_factory=list)
    free: list[str] = field(default_factory=list)  # candidates free now
    live: int = 0  # systems ruled out only by a live filter (who holds them, who they are lent to, now)

    def message(self) -> str:
        parts = [f"{count} system(s) ruled out: {reason}" for reason, count in
                 sorted(self.ruled_out.items(), key=lambda item: (-item[1], item[0]))]
        if self.busy:
            shown = ", ".join(f"{fqdn} until {format_time(until) if until else 'further notice'}"
                              for fqdn, until in self.busy[:5])
            parts.append(f"{len(self.busy)} candidate(s) busy: {shown}")
        if not self.candidates and self.ruled_out.get(LENT_TO_ANOTHER):
            parts.append("it waits for a loan to end: the systems that could run it are lent to someone else")
        elif not self.candidates and self.live:
            parts.append(f"it waits for who holds or borrows {self.live} system(s) to change")
        elif not self.candidates:
            parts.append("no system can ever satisfy this recipe")
        return "; ".join(parts)


def explain(tree: dict | None, hosts: Iterable[Host], usable: Usable, busy_until: Callable[[int], object],
            force: str | None = None, judge: Callable[[Host], tuple] | None = None) -> Explanation:
    """busy_until(system id) is False for a free system, else the end of what holds it (None: open-ended).
    judge(host) is verdict(tree, host), or a caller's memo of it (recipes asking alike are judged once)."""
    judge = judge or (lambda host: verdict(tree, host))
    result = Explanation()
    for host in hosts:
        result.total += 1
        if force is not None and host.fqdn != force:
            reason = f"not the forced system {force}"
        else:
            ok, reason = judge(host)
            if ok:
                ok, reason = usable(host)
        if reason:
            result.ruled_out[reason] = result.ruled_out.get(reason, 0) + 1
            continue
        result.candidates += 1
        state = busy_until(host.id)
        if state is not False:
            result.busy.append((host.fqdn, state))
        else:
            result.free.append(host.fqdn)
    result.busy.sort(key=lambda item: (item[1] is None, item[1].timestamp() if item[1] else 0))
    return result
