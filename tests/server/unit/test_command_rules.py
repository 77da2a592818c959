"""The command queue's state machine and retry policy."""
from datetime import timedelta

import pytest

from lablease.domain.commands import STATES, check_transition, retry_delay
from lablease.domain.errors import Conflict

ALLOWED = {("queued", "running"), ("queued", "failed"), ("running", "completed"), ("running", "queued"),
           ("running", "failed"), ("queued", "cancelled"), ("running", "cancelled")}


@pytest.mark.parametrize("current", STATES)
@pytest.mark.parametrize("new", STATES)
def test_only_the_designed_transitions_are_allowed(current, new):
    if (current, new) in ALLOWED:
        check_transition(current, new)
    else:
        with pytest.raises(Conflict):
            check_transition(current, new)


def test_finished_commands_never_move_again():
    for done in ("completed", "failed"):
        for new in STATES:
            with pytest.raises(Conflict):
                check_transition(done, new)


def test_the_delay_doubles_after_each_failure_until_attempts_run_out():
    first = timedelta(seconds=10)
    assert [retry_delay(n, 4, first) for n in (1, 2, 3, 4)] == [
        timedelta(seconds=10), timedelta(seconds=20), timedelta(seconds=40), None]
    assert retry_delay(1, 1, first) is None  # one attempt allowed: the first failure is final
