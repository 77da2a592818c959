"""What a reservation's end does to its system, and why it ended (domain/returns.py): the one rule the API's
return, the worker's batch and the cascade each ask."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from lablease.domain.reservations import state
from lablease.domain.returns import (EXPIRY_REASONS, RELEASED, WHY, SystemAtEnd, expiry_reason, release, resets_usage,
                                     tells_holder, touches_system)

QUIET = SystemAtEnd("idle", "manual", "leave_on", power_driver=False, netboot_mac=False)
POWERED = SystemAtEnd("idle", "automated", "power_off", power_driver=True, netboot_mac=False)


@pytest.mark.parametrize("system, action", [
    (QUIET, None),  # no power driver: nothing to switch
    (POWERED, "off"),
    (SystemAtEnd("idle", "automated", "power_off", power_driver=False, netboot_mac=False), None),
    (SystemAtEnd("idle", "broken", "power_off", power_driver=True, netboot_mac=False), None),
    (SystemAtEnd("idle", "removed", "reprovision", power_driver=True, netboot_mac=False), None),
    (SystemAtEnd("idle", "manual", "leave_on", power_driver=True, netboot_mac=False), None),
    (SystemAtEnd("idle", "manual", "reprovision", power_driver=True, netboot_mac=False), "reprovision"),
    (SystemAtEnd("idle", "manual", "reprovision", True, False, reprovision_tree=False), None),  # nothing to install
])
def test_the_release_action_that_runs(system, action):
    assert release(system) == action


@pytest.mark.parametrize("usage, reset", [
    ("idle", False), ("scheduled", False), ("pending", False),
    ("waiting", True), ("installing", True), ("running", True),
])
def test_a_busy_usage_is_set_idle_at_the_end(usage, reset):
    assert resets_usage(usage) is reset


@pytest.mark.parametrize("system, installing, touched", [
    (QUIET, False, False),  # plain: the batch and the API's return write it whole
    (QUIET, True, True),  # an installation of the reservation to stop or complete
    (SystemAtEnd("running", "manual", "leave_on", False, False), False, True),  # usage to reset
    (SystemAtEnd("idle", "manual", "leave_on", False, True), False, True),  # a netboot entry to clear
    (POWERED, False, True),  # a release action to run
    (SystemAtEnd("idle", "broken", "power_off", True, False), False, False),  # a power driver alone is not enough
    (SystemAtEnd("idle", "manual", "leave_on", True, False), False, False),
])
def test_what_touches_the_system(system, installing, touched):
    assert touches_system(system, installing) is touched


NOW = datetime(2026, 11, 28, 12, 0, tzinfo=timezone.utc)


@pytest.mark.parametrize("end, due, not_taken, reason", [
    (NOW, NOW, False, "expired"),  # the end came: the deadline is the end
    (NOW + timedelta(hours=1), NOW, False, "heartbeat_missed"),  # the heartbeat's deadline came first
    (None, NOW, False, "heartbeat_missed"),  # no end: only a heartbeat can end it
    (NOW, NOW, True, "not_taken"),  # granted through the waiting line, never confirmed
])
def test_why_the_worker_returned_it(end, due, not_taken, reason):
    assert expiry_reason(end, due, not_taken) == reason
    assert state(NOW - timedelta(hours=2), NOW, reason, NOW) == "expired"


def test_every_reason_is_told_in_words_and_only_the_workers_read_expired():
    assert set(EXPIRY_REASONS) <= set(WHY)
    for reason in WHY:
        assert state(NOW - timedelta(hours=2), NOW, reason, NOW) == (
            "expired" if reason in EXPIRY_REASONS else "returned")


@pytest.mark.parametrize("reason, by_holder, told", [
    ("returned", True, False),  # they gave it back themselves
    ("returned", False, True),  # an admin gave it back for them
    ("expired", False, True),
    ("loan_ended", False, True),
    (RELEASED, False, False),  # a recipe set's hold on a system while it waited: never the holder's to use
])
def test_who_is_told_of_a_reservations_end(reason, by_holder, told):
    assert tells_holder(reason, by_holder) is told
