"""What a reservation's end does to its system, and why it ended — one rule for every way it ends.

A reservation ends by its holder's return (the API's plain path, services/lifecycle/lease.py), by expiry one at a
time (services/lifecycle/reservations.py) or in a batch (services/lifecycle/expiry.py), and through the cascade
(services/booking/endings.py, services/installations.on_reservation_closed). Each asks the same questions of the
same facts; the answers are here, pure, with their table test (tests/server/unit/test_returns.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

# A system's usage while a recipe or an installation works on it: the end of its reservation sets it idle.
BUSY_USAGE = ("waiting", "installing", "running")
# An installation not yet done: its reservation's end stops it (cancelled), as does a failure of the system.
UNFINISHED_INSTALLATION = ("queued", "installing", "installed")
# An installation its reservation's end still has to close: stopped if unfinished, completed if running.
OPEN_INSTALLATION = (*UNFINISHED_INSTALLATION, "running")

# Why a reservation ended (its return_reason), in the words its holder is told.
WHY = {
    "ar_ended": "the advance reservation it was made in ended",
    "expired": "its end was reached",
    "heartbeat_missed": "no heartbeat arrived in time",
    "lent_away": "the system was lent to another user",
    "loan_ended": "the loan that gave you access ended",
    "not_taken": "it was not confirmed (heartbeat or change) within its take_by time",
    "removed": "the system was removed",
    "returned": "returned by hand",
    "returned_with_reservation": "returned together with your reservation (return_loan)",
}
# The reasons that are the worker's: the reservation's state reads "expired", not "returned".
EXPIRY_REASONS = ("expired", "heartbeat_missed", "not_taken")
# A system a recipe set held while it waited for the rest of its systems, given back ("released"): never its
# holder's to use, so neither the holder is told nor anything done to the system.
RELEASED = "released"
# Conditions in which nothing is done to a system's power at the end of a reservation.
OUT_OF_SERVICE = ("broken", "removed")


@dataclass(frozen=True)
class SystemAtEnd:
    """What of the system its reservation's end looks at."""

    usage: str
    condition: str
    release_action: str  # power_off, leave_on or reprovision
    power_driver: bool  # it has a power driver (the release action needs one)
    netboot_mac: bool  # it has a netboot entry to clear
    reprovision_tree: bool = True  # a tree for the reprovision release action (unknown: assume one)


def release(system: SystemAtEnd) -> str | None:
    """The release action to run when a reservation of it ends: "off", "reprovision" or None."""
    if not system.power_driver or system.condition in OUT_OF_SERVICE:
        return None
    if system.release_action == "power_off":
        return "off"
    if system.release_action == "reprovision" and system.reprovision_tree:
        return "reprovision"
    return None


def resets_usage(usage: str) -> bool:
    """The end of a reservation sets the system's usage idle again."""
    return usage in BUSY_USAGE


def touches_system(system: SystemAtEnd, open_installation: bool) -> bool:
    """Whether the end does anything to the system beyond freeing its slot: an installation of the
    reservation to close, a usage to reset, a netboot entry to clear or a release action to run. A return
    that touches nothing is plain: the API's return and the worker's batch write it whole, without the cascade."""
    return open_installation or resets_usage(system.usage) or system.netboot_mac or release(system) is not None


def expiry_reason(end_at: datetime | None, due_at: datetime, not_taken: bool = False) -> str:
    """Why the worker returned it: not taken in time after the waiting line granted it, its heartbeat
    deadline came before its end (or it has no end), or its end passed."""
    if not_taken:
        return "not_taken"
    return "heartbeat_missed" if end_at is None or due_at < end_at else "expired"


def tells_holder(reason: str, by_holder: bool) -> bool:
    """Is the holder told of their reservation's end? Not when they ended it, nor for a held system released."""
    return not by_holder and reason != RELEASED
