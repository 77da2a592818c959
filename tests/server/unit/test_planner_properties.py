"""Properties of the pure planner over random labs: thousands of cases, no database.

Hosts with random arches, memory, pools and attributes; random host
requirements; random bookings on a calendar; random queues of multi-host
recipe sets. What must hold whatever the lab: filters agree with their own
negations and with the explanations; a set is placed whole or not at all, on
distinct systems that match and are free (a recipe without a runtime limit
never lands before a booking; one with a limit only when it ends first), and
whenever the set could start; a freed system goes to the first set in
priority-then-age order that can start, never to a younger one; and systems
freed one by one never leave two sets each waiting on the other.
"""
from __future__ import annotations

import itertools
from datetime import datetime, timedelta, timezone

from hypothesis import given, settings, strategies as st

from lablease.domain.windows import Window, overlaps
from lablease.scheduler.filters import Host, verdict
from lablease.scheduler.planner import (Need, candidates, explain, offer_order, place, place_partial, queue_key,
                                        run_window, shuffled_within_tiers, tier)

NOW = datetime(2026, 11, 22, 12, tzinfo=timezone.utc)
H = timedelta(hours=1)
ARCHES = ("x86_64", "aarch64", "s390x")
POOLS = ("fast", "gpu", "lab2")
# 100 examples a property: the 12 faults put in the planner, the filters or the queue's order that these
# properties catch at 200 (a greedy matching, bookings ignored, a held system taken, priority or age ignored,
# != of an unset field, the holding set offered last...) each failed every run at 100 too; at 60, one of them
# passed two runs of three. Drawing a lab is nearly all of the time (the planner takes microseconds).
MANY = settings(max_examples=100, deadline=None)

hosts_ = st.lists(st.builds(
    dict, arch=st.sampled_from(ARCHES), memory=st.sampled_from([None, 2048, 4096, 8192]),
    pools=st.frozensets(st.sampled_from(POOLS)),
    gpu=st.lists(st.sampled_from(["nvidia", "amd", "10", "9"]), max_size=2, unique=True),
), min_size=1, max_size=6).map(lambda specs: [
    Host(i + 1, f"h{i + 1}.lab.test", s["arch"], memory=s["memory"], pools=s["pools"],
         attributes={"gpu": s["gpu"]} if s["gpu"] else {}) for i, s in enumerate(specs)])

leaves_ = st.one_of(
    st.builds(lambda op, v: {"field": "arch", "op": op, "value": v}, st.sampled_from(["=", "!="]),
              st.sampled_from(ARCHES)),
    st.builds(lambda op, v: {"field": "memory", "op": op, "value": v},
              st.sampled_from(["=", "!=", "<", "<=", ">", ">="]), st.sampled_from([2048, 4096, 8192])),
    st.builds(lambda op, v: {"field": "pool", "op": op, "value": v}, st.sampled_from(["=", "!="]),
              st.sampled_from(POOLS + ("",))),
    st.builds(lambda op, v: {"field": "key_value", "key": "gpu", "op": op, "value": v},
              st.sampled_from(["=", "!="]), st.sampled_from(["nvidia", "amd", "10", 10, "10.0", 9])),
    st.builds(lambda op, v: {"field": "hostname", "op": op, "value": v}, st.sampled_from(["=", "!=", "like"]),
              st.sampled_from(["h1.lab.test", "h2.lab.test", "h%.lab.test", "%2%"])),
)
trees = st.recursive(leaves_, lambda children: st.one_of(
    st.builds(lambda c: {"and": c}, st.lists(children, max_size=3)),
    st.builds(lambda c: {"or": c}, st.lists(children, min_size=1, max_size=3)),
    st.builds(lambda c: {"not": c}, children)), max_leaves=6)

runtimes = st.one_of(st.none(), st.integers(1, 6).map(lambda hours: hours * H))
# Bookings per system: start and length in hours from NOW (a start before NOW is one holding it now).
bookings_ = st.lists(st.tuples(st.integers(-3, 8), st.one_of(st.none(), st.integers(1, 4))), max_size=2)


def window(start: int, length: int | None) -> Window:
    return Window(NOW + start * H, None if length is None else NOW + (start + length) * H)


def negated(leaf: dict) -> dict:
    return {**leaf, "op": "!=" if leaf["op"] == "=" else "="}


# --- filters ----------------------------------------------------------------------------------------------

@MANY
@given(hosts=hosts_, tree=trees)
def test_a_verdict_has_a_reason_exactly_when_it_rules_out_and_not_flips_it(hosts, tree):
    for host in hosts:
        matches, reason = verdict(tree, host)
        assert (reason is None) == matches
        assert verdict({"not": tree}, host)[0] is not matches
        assert verdict({"not": {"not": tree}}, host)[0] is matches


@MANY
@given(hosts=hosts_, children=st.lists(trees, max_size=3))
def test_and_is_all_or_is_any_and_a_failed_and_names_its_first_failing_child(hosts, children):
    for host in hosts:
        verdicts = [verdict(child, host) for child in children]
        assert verdict({"and": children}, host)[0] is all(v[0] for v in verdicts)
        if children:
            assert verdict({"or": children}, host)[0] is any(v[0] for v in verdicts)
        failing = [v for v in verdicts if not v[0]]
        if failing:
            assert verdict({"and": children}, host) == failing[0]


@MANY
@given(hosts=hosts_, leaf=leaves_.filter(lambda leaf: leaf["op"] in ("=", "!=")))
def test_not_equal_is_the_negation_of_equal(hosts, leaf):
    for host in hosts:
        assert verdict(negated(leaf), host)[0] is not verdict(leaf, host)[0], (leaf, host)


@MANY
@given(hosts=hosts_, tree=trees, barred=st.sets(st.integers(1, 6)), busy=st.sets(st.integers(1, 6)))
def test_the_explanation_accounts_for_every_system_and_agrees_with_the_candidates(hosts, tree, barred, busy):
    def usable(h):
        return (False, "you may not use it") if h.id in barred else (True, None)

    found = candidates(tree, hosts, usable)
    assert [h.id for h in found] == [h.id for h in hosts if verdict(tree, h)[0] and h.id not in barred]
    why = explain(tree, hosts, usable, lambda sid: NOW + H if sid in busy else False)
    assert (why.total, why.candidates) == (len(hosts), len(found))
    assert sum(why.ruled_out.values()) == len(hosts) - len(found)
    assert [fqdn for fqdn, _ in why.busy] == [h.fqdn for h in found if h.id in busy]
    assert ("no system can ever satisfy this recipe" in why.message()) is (not found)


# --- placement --------------------------------------------------------------------------------------------

labs = st.fixed_dictionaries({
    "hosts": hosts_,
    "recipes": st.lists(st.tuples(trees, runtimes, st.lists(st.sampled_from(POOLS), max_size=2, unique=True)),
                        min_size=1, max_size=4),
    "bookings": st.lists(bookings_, min_size=6, max_size=6),
})


def plan_inputs(lab):
    """Needs as the scheduler builds them (candidates that match, in autopick order), and the calendar."""
    hosts = lab["hosts"]
    calendar = {h.id: [window(*b) for b in lab["bookings"][h.id - 1]] for h in hosts}
    needs = []
    for n, (tree, runtime, pools) in enumerate(lab["recipes"]):
        found = candidates(tree, hosts, lambda h: (True, None))
        ordered = sorted(found, key=lambda h: (tier(h, pools), h.fqdn))
        needs.append(Need(100 + n, tuple(h.id for h in ordered), runtime))

    def is_free(system: int, runtime: timedelta | None) -> bool:
        return not any(overlaps(run_window(NOW, runtime), booked) for booked in calendar[system])

    return needs, calendar, is_free


def fits(runtime: timedelta | None, booked: list[Window]) -> bool:
    """Free for the whole run, said without the planner's words: every booking ended already, or starts
    once a recipe with a runtime limit is done."""
    return all((b.end is not None and b.end <= NOW) or (runtime is not None and NOW + runtime <= b.start)
               for b in booked)


def any_assignment(needs, usable) -> bool:
    """Brute force: distinct usable systems, one per need?"""
    options = [[s for s in need.candidates if usable(s, need)] for need in needs]
    return any(len(set(choice)) == len(choice) for choice in itertools.product(*options))


def maximum_matching(needs, usable) -> int:
    best = 0
    for size in range(len(needs), 0, -1):
        if any(any_assignment(subset, usable) for subset in itertools.combinations(needs, size)):
            return size
    return best


@MANY
@given(lab=labs)
def test_a_set_is_placed_whole_on_distinct_matching_free_systems_whenever_it_can_start(lab):
    needs, calendar, is_free = plan_inputs(lab)
    plan = place(needs, is_free)
    trees = {100 + n: tree for n, (tree, _, _) in enumerate(lab["recipes"])}
    hosts = {h.id: h for h in lab["hosts"]}
    possible = any_assignment(needs, lambda s, need: fits(need.runtime, calendar[s]))
    assert (plan is not None) is possible  # never blocked needlessly; never started half
    if plan is None:
        return
    assert sorted(plan) == sorted(need.recipe_id for need in needs)
    assert len(set(plan.values())) == len(plan)  # no system twice
    for need in needs:
        system = plan[need.recipe_id]
        assert verdict(trees[need.recipe_id], hosts[system])[0]
        assert fits(need.runtime, calendar[system])  # backfill only when the run ends before the booking


@MANY
@given(lab=labs)
def test_a_lone_recipe_takes_its_best_free_candidate(lab):
    needs, calendar, is_free = plan_inputs(lab)
    need = needs[0]
    free = [s for s in need.candidates if fits(need.runtime, calendar[s])]
    assert place([need], is_free) == ({need.recipe_id: free[0]} if free else None)


@MANY
@given(lab=labs, held=st.integers(1, 6))
def test_the_head_holds_as_much_as_can_be_held_and_keeps_what_it_holds(lab, held):
    needs, calendar, is_free = plan_inputs(lab)
    partial = place_partial(needs, is_free)
    usable = lambda s, need: fits(need.runtime, calendar[s])  # noqa: E731
    assert len(partial) == maximum_matching(needs, usable)
    assert len(set(partial.values())) == len(partial)
    assert all(partial[n.recipe_id] in n.candidates and is_free(partial[n.recipe_id], n.runtime)
               for n in needs if n.recipe_id in partial)
    holding = [Need(needs[0].recipe_id, needs[0].candidates, needs[0].runtime, held=held), *needs[1:]]
    again = place_partial(holding, is_free)
    assert again[needs[0].recipe_id] == held and list(again.values()).count(held) == 1


@MANY
@given(lab=labs, keep=st.lists(st.booleans(), min_size=6, max_size=6))
def test_the_head_offered_a_system_keeps_every_system_it_holds_and_still_holds_as_much_as_can_be(lab, keep):
    needs, calendar, is_free = plan_inputs(lab)
    usable = lambda s, need: fits(need.runtime, calendar[s])  # noqa: E731
    held = {r: s for (r, s), kept in zip(sorted(place_partial(needs, is_free).items()), keep) if kept}
    partial = place_partial(needs, is_free, held)
    assert len(partial) == maximum_matching(needs, usable)
    assert set(held.values()) <= set(partial.values())  # nothing held is given back
    assert len(set(partial.values())) == len(partial)


def test_a_freed_system_that_adds_no_recipe_is_not_swapped_for_a_held_one():
    """The head's recipes hold 1, 2 and 3; system 9 is freed. Dealt afresh, the first recipe takes 9 and the
    second 1, and 2 is given back (offered again, for nothing); from what it holds, the head keeps 1, 2, 3."""
    needs = [Need(11, (1, 9)), Need(12, (1, 2, 3, 9)), Need(13, (3,)), Need(14, ())]
    free = lambda system, runtime: True  # noqa: E731
    assert set(place_partial(needs, free).values()) == {1, 3, 9}
    assert place_partial(needs, free, {11: 1, 12: 2, 13: 3}) == {11: 1, 12: 2, 13: 3}


# --- the queue --------------------------------------------------------------------------------------------

queued = st.lists(st.tuples(st.sampled_from([0, 1, 2]), st.integers(0, 5), st.integers(0, 2)), min_size=1,
                  max_size=12)  # per recipe: priority, minutes queued after NOW, class


@MANY
@given(recipes=queued, holding=st.one_of(st.none(), st.integers(0, 11)))
def test_a_freed_system_is_offered_by_priority_then_age_each_set_once(recipes, holding):
    # recipe n belongs to set n // 2 (sets of one or two recipes); each class's queue is in its own order
    rows = [(*queue_key(priority, NOW + minutes * timedelta(minutes=1), n), n // 2)
            for n, (priority, minutes, _) in enumerate(recipes)]
    queues = [sorted(row for row, (_, _, cls) in zip(rows, recipes) if cls == c) for c in range(3)]
    offered = list(offer_order(holding, queues))
    # said plainly: a set's place is that of its best recipe: highest priority, then queued first, then id
    place_of = {}
    for n, (priority, minutes, _) in enumerate(recipes):
        place_of[n // 2] = min(place_of.get(n // 2, (3, 6, n)), (2 - priority, minutes, n))
    expected = sorted(place_of, key=place_of.get)
    if holding is not None:
        expected = [holding] + [s for s in expected if s != holding]
    assert offered == expected


@MANY
@given(hosts=hosts_, sets=st.lists(st.tuples(st.sampled_from([0, 1, 2]), st.lists(trees, min_size=1, max_size=3)),
                                   min_size=1, max_size=5), order=st.randoms(use_true_random=False))
def test_systems_freed_one_by_one_go_to_the_first_set_that_can_start_and_never_deadlock(hosts, sets, order):
    """Every system starts busy and is freed once, in random order; each is offered as the scheduler does:
    offer_order over the sets that could use it, each tried whole with place()."""
    needs = {}
    keys = {}
    ahead = {}  # said plainly: higher priority, or the same and queued earlier (a lower set id)
    for set_id, (priority, wanted) in enumerate(sets):
        ahead[set_id] = {other for other, (p, _) in enumerate(sets)
                         if p > priority or (p == priority and other < set_id)}
        keys[set_id] = queue_key(priority, NOW + set_id * timedelta(minutes=1), set_id)
        needs[set_id] = [Need(10 * set_id + n, tuple(h.id for h in candidates(tree, hosts, lambda h: (True, None))))
                         for n, tree in enumerate(wanted)]
    free: set[int] = set()
    running: dict[int, dict[int, int]] = {}
    released = [h.id for h in hosts]
    order.shuffle(released)
    for system in released:
        free.add(system)
        users = [s for s in needs if s not in running and any(system in n.candidates for n in needs[s])]
        queue = sorted((*keys[s], s) for s in users)
        for set_id in offer_order(None, [queue]):
            if system not in free:
                break
            plan = place(needs[set_id], lambda s, runtime: s in free)
            if plan is None:
                continue
            earlier = [s for s in users if s in ahead[set_id] and s not in running]
            assert all(place(needs[e], lambda s, runtime: s in free) is None for e in earlier)  # no queue jumping
            assert set(plan) == {n.recipe_id for n in needs[set_id]}  # whole
            running[set_id] = plan
            free -= set(plan.values())
    used = [s for plan in running.values() for s in plan.values()]
    assert len(used) == len(set(used))
    # no deadlock: nothing left waiting could start on the systems left free
    assert all(place(needs[w], lambda s, runtime: s in free) is None for w in needs if w not in running)


# --- autopick ---------------------------------------------------------------------------------------------

@MANY
@given(ranked=st.lists(st.tuples(st.integers(1, 50), st.integers(0, 3)), unique_by=lambda r: r[0], max_size=12),
       rng=st.randoms(use_true_random=False))
def test_random_autopick_shuffles_only_within_a_tier(ranked, rng):
    ordered = shuffled_within_tiers(ranked, rng)
    tiers = dict(ranked)
    assert sorted(ordered) == sorted(tiers)
    assert [tiers[s] for s in ordered] == sorted(tiers.values())
