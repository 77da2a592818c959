"""The planner as pure functions: filters with reasons, all-or-nothing placement, autopick order."""
import random
from datetime import datetime, timedelta, timezone

import pytest

from lablease.domain.recipes import check_transition, keeps_system, rollup_status, worst_result
from lablease.domain.errors import Conflict
from lablease.domain.permissions import LENT_TO_ANOTHER
from lablease.scheduler.filters import Host, verdict
from lablease.scheduler.planner import Need, explain, place, place_partial, shuffled_within_tiers, tier

X86 = Host(1, "a.lab.test", "x86_64", memory=8192, cpu_count=8, lab="lab1", attributes={"gpu": ["nvidia"]},
           pools=frozenset({"gpu"}))
ARM = Host(2, "b.lab.test", "aarch64", memory=4096, cpu_count=4, lab="lab2")


def leaf(field, op, value, **extra):
    return {"field": field, "op": op, "value": value, **extra}


@pytest.mark.parametrize("tree, host, expected", [
    (None, ARM, (True, None)),
    ({"and": []}, ARM, (True, None)),
    (leaf("arch", "=", "x86_64"), ARM, (False, "arch = x86_64")),
    (leaf("memory", ">=", 8192), X86, (True, None)),
    (leaf("memory", ">=", 8192), ARM, (False, "memory >= 8192")),
    (leaf("hostname", "like", "%.lab.test"), ARM, (True, None)),
    (leaf("hostname", "like", "a.%"), ARM, (False, "hostname like a.%")),
    (leaf("key_value", "=", "nvidia", key="gpu"), X86, (True, None)),
    (leaf("key_value", "=", "nvidia", key="gpu"), ARM, (False, "key_value[gpu] = nvidia")),
    (leaf("key_value", "!=", "nvidia", key="gpu"), ARM, (True, None)),
    (leaf("pool", "=", "gpu"), X86, (True, None)),
    (leaf("pool", "=", ""), X86, (False, 'pool = ""')),   # "in no pool"
    (leaf("pool", "=", ""), ARM, (True, None)),
    (leaf("pool", "!=", ""), X86, (True, None)),          # "in any pool"
    ({"not": leaf("lab", "=", "lab2")}, ARM, (False, "not (lab = lab2)")),
    ({"or": [leaf("arch", "=", "s390x"), leaf("lab", "=", "lab9")]}, ARM, (False, "arch = s390x or lab = lab9")),
    ({"and": [leaf("cpu_count", ">", 2), leaf("lab", "=", "lab1")]}, ARM, (False, "lab = lab1")),
])
def test_filters_say_why(tree, host, expected):
    assert verdict(tree, host) == expected


def free_all(system, runtime):
    return True


def test_all_or_nothing():
    needs = [Need(10, (1, 2)), Need(11, (1,))]
    assert place(needs, free_all) == {10: 2, 11: 1}  # augmenting path: 10 moves over for 11
    assert place([Need(10, (1,)), Need(11, (1,))], free_all) is None
    assert place_partial([Need(10, (1,)), Need(11, (1,))], free_all) in ({10: 1}, {11: 1})


def test_busy_systems_and_held_ones():
    busy = {1}
    assert place([Need(10, (1, 2))], lambda s, r: s not in busy) == {10: 2}
    assert place([Need(10, (1,), held=1), Need(11, (2,))], lambda s, r: s not in busy) == {10: 1, 11: 2}


def test_backfill_is_decided_by_the_free_check():
    limit = timedelta(hours=1)

    def is_free(system, runtime):  # system 1 has a booking in two hours
        return runtime is not None and runtime <= timedelta(hours=2)

    assert place([Need(10, (1,), runtime=limit)], is_free) == {10: 1}
    assert place([Need(10, (1,), runtime=None)], is_free) is None


def test_autopick_tiers_in_order_with_the_rest_last():
    hosts = [Host(1, "z.lab.test", "x86_64", pools=frozenset({"slow"})),
             Host(2, "y.lab.test", "x86_64", pools=frozenset({"fast"})),
             Host(3, "a.lab.test", "x86_64"),
             Host(4, "b.lab.test", "x86_64", pools=frozenset({"fast", "slow"}))]
    assert [tier(h, ["fast", "slow"]) for h in hosts] == [1, 0, 2, 0]
    assert [tier(h, []) for h in hosts] == [0, 0, 0, 0]
    ranked = [(h.id, tier(h, ["fast"])) for h in hosts]
    shuffled = {tuple(shuffled_within_tiers(ranked, random.Random(seed))) for seed in range(20)}
    assert all(set(order[:2]) == {2, 4} for order in shuffled) and len(shuffled) > 1


def test_explanation_counts_reasons_and_busy_candidates():
    until = datetime(2026, 11, 22, 14, tzinfo=timezone.utc)
    hosts = [X86, ARM, Host(3, "c.lab.test", "aarch64"), Host(4, "d.lab.test", "x86_64")]
    usable = lambda h: (False, "you may not use it") if h.id == 4 else (True, None)  # noqa: E731
    result = explain(leaf("arch", "=", "x86_64"), hosts, usable, lambda sid: until if sid == 1 else False)
    assert result.ruled_out == {"arch = x86_64": 2, "you may not use it": 1}
    assert result.busy == [("a.lab.test", until)]
    assert result.message() == ("2 system(s) ruled out: arch = x86_64; 1 system(s) ruled out: you may not use it; "
                                "1 candidate(s) busy: a.lab.test until 2026-11-22T14:00:00Z")


def test_a_recipe_whose_systems_are_only_lent_away_waits_for_a_loan_not_forever():
    hosts = [X86, ARM]
    lent = lambda h: (False, LENT_TO_ANOTHER)  # noqa: E731
    result = explain(leaf("arch", "=", "x86_64"), hosts, lent, lambda sid: False)
    assert result.message() == ("1 system(s) ruled out: arch = x86_64; 1 system(s) ruled out: the system is lent "
                                "to another user; it waits for a loan to end: the systems that could run it are lent "
                                "to someone else")
    refused = lambda h: (False, "you may not use this system")  # noqa: E731
    assert explain(leaf("arch", "=", "x86_64"), hosts, refused, lambda sid: False).message().endswith(
        "; no system can ever satisfy this recipe")


def test_state_machine_and_rollups():
    check_transition("queued", "scheduled")
    check_transition("running", "aborted")
    with pytest.raises(Conflict):
        check_transition("queued", "running")
    with pytest.raises(Conflict, match="already completed"):
        check_transition("completed", "aborted")
    assert rollup_status(["running", "scheduled", "completed"]) == "scheduled"
    assert rollup_status(["completed", "aborted"]) == "aborted"
    assert worst_result(["pass", "warn", "pass"]) == "warn"


@pytest.mark.parametrize("flags, status, result, keeps", [
    (None, "completed", "fail", False),
    ({"onabort": True, "onfail": True, "onwarn": True, "onpass": True}, "cancelled", "none", False),
    ({"onabort": True, "onfail": False, "onwarn": False, "onpass": False}, "aborted", "none", True),
    ({"onabort": True, "onfail": False, "onwarn": False, "onpass": False}, "completed", "fail", False),
    ({"onabort": False, "onfail": True, "onwarn": False, "onpass": False}, "completed", "fail", True),
    ({"onabort": False, "onfail": False, "onwarn": True, "onpass": False}, "completed", "warn", True),
    ({"onabort": False, "onfail": False, "onwarn": False, "onpass": True}, "completed", "pass", True),
    ({"onabort": True, "onfail": True, "onwarn": True, "onpass": False}, "completed", "pass", False),
])
def test_reservesys_flags(flags, status, result, keeps):
    assert keeps_system(flags, status, result) is keeps


def test_attribute_values_compare_as_numbers_when_both_are_numbers():
    host = Host(1, "a.lab.test", "x86_64", attributes={"disks": ["10"], "model": ["r640"]})
    assert verdict(leaf("key_value", ">", "9", key="disks"), host) == (True, None)
    assert verdict(leaf("key_value", ">", 9, key="disks"), host) == (True, None)
    # != rules out exactly what = lets through: 10 equals "10" (and "10.0"), so "not 10" excludes this host
    assert verdict(leaf("key_value", "=", 10, key="disks"), host) == (True, None)
    assert verdict(leaf("key_value", "!=", 10, key="disks"), host) == (False, "key_value[disks] != 10")
    assert verdict(leaf("key_value", "!=", "10.0", key="disks"), host)[0] is False
    assert verdict(leaf("key_value", "<", "9", key="disks"), host)[0] is False
    assert verdict(leaf("key_value", "=", "r640", key="model"), host) == (True, None)
    assert verdict(leaf("key_value", "like", "r6%", key="model"), host) == (True, None)
