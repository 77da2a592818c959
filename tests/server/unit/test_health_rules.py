"""The health rules (domain/health.py): when a check is due, which check applies, what a check's end means."""
from datetime import datetime, timedelta, timezone

import pytest

from lablease.domain import health as rules
from lablease.domain.errors import Invalid

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=timezone.utc)
H = timedelta(hours=1)
DAILY = rules.Cadence(every=24 * H)
AFTER3 = rules.Cadence(after_recipes=3)
BOTH = rules.Cadence(every=24 * H, after_recipes=3)
FORCED_ONLY = rules.Cadence()


def standing(condition="automated", checking=False, forced=False, last=None, recipes=0):
    return rules.Standing(condition, checking, forced, last, recipes)


@pytest.mark.parametrize("case, cadence, expected", [
    ("never checked, daily: at once", (standing(), DAILY), NOW),
    ("checked 2h ago, daily: 22h from now", (standing(last=NOW - 2 * H), DAILY), NOW + 22 * H),
    ("checked 30h ago, daily: at once (late, not in the past)", (standing(last=NOW - 30 * H), DAILY), NOW),
    ("2 recipes of 3: not yet", (standing(last=NOW - H, recipes=2), AFTER3), None),
    ("3 recipes of 3: at once", (standing(last=NOW - H, recipes=3), AFTER3), NOW),
    ("both: recipes first", (standing(last=NOW - H, recipes=3), BOTH), NOW),
    ("both: else the time", (standing(last=NOW - H, recipes=1), BOTH), NOW + 23 * H),
    ("back from broken: at once", (standing(last=NOW - H, forced=True), AFTER3), NOW),
    ("forced, check with no cadence: at once", (standing(forced=True), FORCED_ONLY), NOW),
    ("no cadence, not forced: never", (standing(), FORCED_ONLY), None),
    ("no check applies: never", (standing(forced=True), None), None),
    ("a check runs already: not another", (standing(checking=True, forced=True), DAILY), None),
    ("manual system: never", (standing("manual", forced=True), DAILY), None),
    ("broken system: never", (standing("broken", recipes=9), AFTER3), None),
])
def test_when_the_next_check_is_due(case, cadence, expected):
    state, cad = cadence
    assert rules.next_check_at(state, cad, NOW) == expected, case


CHECKS = [("arch", "x86_64", "arch-check"), ("pool", "gpu", "gpu-check"), ("pool", "alpha", "alpha-check"),
          ("system", "a.lab.test", "own-check")]


@pytest.mark.parametrize("fqdn, pools, arch, expected", [
    ("a.lab.test", ["gpu"], "x86_64", "own-check"),  # the system's own wins
    ("b.lab.test", ["gpu"], "x86_64", "gpu-check"),  # then its pool's
    ("b.lab.test", ["gpu", "alpha"], "x86_64", "alpha-check"),  # of two pools, the first by name
    ("b.lab.test", [], "x86_64", "arch-check"),  # then its arch's
    ("b.lab.test", ["other"], "aarch64", None),  # none applies
])
def test_which_check_applies(fqdn, pools, arch, expected):
    assert rules.applicable(CHECKS, fqdn, pools, arch) == expected


@pytest.mark.parametrize("status, result, expected", [
    ("completed", "pass", True), ("completed", "warn", True), ("completed", None, True),
    ("completed", "fail", False), ("aborted", None, False), ("aborted", "pass", False),
    ("cancelled", None, None),
])
def test_what_a_finished_check_says(status, result, expected):
    assert rules.passed(status, result) is expected


@pytest.mark.parametrize("state, passed_at, expected", [
    ("good", NOW - 23 * H, True), ("good", NOW - 24 * H, True), ("good", NOW - 25 * H, False),
    ("good", None, False), ("bad", NOW - H, False), ("checking", NOW - H, False), ("unknown", None, False),
])
def test_healthy_within(state, passed_at, expected):
    assert rules.recent(state, passed_at, 24 * H, NOW) is expected


def test_a_failure_reason_names_the_check_how_it_ended_and_the_failing_tasks():
    text = rules.failure_reason("disk", "completed", "fail", [{"name": "/smart", "result": "fail"},
                                                              {"name": "/mem", "result": "pass"}])
    assert text == "health check disk completed with result fail (failing tasks: /smart)"
    assert rules.failure_reason("disk", "aborted", None, [], "installation 4 failed: install_fail") == (
        "health check disk aborted: installation 4 failed: install_fail")


@pytest.mark.parametrize("scope", [{}, {"arch": "x86_64", "pool": "gpu"}])
def test_a_check_names_exactly_one_scope(scope):
    with pytest.raises(Invalid, match="scope"):
        rules.check_scope(scope)


@pytest.mark.parametrize("every, after, field", [(timedelta(0), None, "every"), (None, 0, "after_recipes")])
def test_a_cadence_is_positive(every, after, field):
    with pytest.raises(Invalid, match=field):
        rules.check_cadence(every, after)
