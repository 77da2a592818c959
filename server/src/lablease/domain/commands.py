"""The command queue's rules: its states, and when a failed attempt is tried again."""
from __future__ import annotations

from datetime import timedelta

from .errors import Conflict

STATES = ("queued", "running", "completed", "failed", "cancelled")
UNFINISHED = ("queued", "running")
# queued -> running (claimed); running -> completed, queued (retry later) or failed (for good);
# queued -> failed when an earlier command of the system failed for good; queued or running
# (stuck) -> cancelled by an administrator.
_NEXT = {"queued": {"running", "failed", "cancelled"}, "running": {"completed", "queued", "failed", "cancelled"}}


def check_transition(current: str, new: str) -> None:
    if new not in _NEXT.get(current, ()):
        raise Conflict(f"a command cannot go from {current} to {new}")


def retry_delay(attempts: int, max_attempts: int, first_delay: timedelta) -> timedelta | None:
    """After `attempts` failed attempts: how long until the next, or None when it has failed for good.

    The delay doubles after each failure: first_delay, 2x, 4x, ...
    """
    if attempts >= max_attempts:
        return None
    return first_delay * (2 ** (attempts - 1))
