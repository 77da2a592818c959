"""Lab agents: when a lab's agent counts as silent (the lab is then degraded; docs/lab-agents.md)."""
from __future__ import annotations

from datetime import datetime, timedelta

from .times import format_time


def agent_state(seen_at: datetime | None, now: datetime, silence: timedelta) -> str:
    """`online`, `silent` (not heard from for longer than `silence`) or `never` (no agent has asked yet)."""
    if seen_at is None:
        return "never"
    return "online" if now - seen_at <= silence else "silent"


def poll_wait(asked: float, silence: timedelta) -> float:
    """How long one long poll of an agent may wait: what it asked, within half the silence limit, so an
    agent waiting for work is never taken for a silent one."""
    return max(0.0, min(asked, silence.total_seconds() / 2))


def silent_agent_note(lab: str, state: str, seen_at: datetime | None) -> str | None:
    """What an unfinished command of an agent-served lab says while the lab's agent is not there: why nothing
    happens and what does it (None while the agent is online)."""
    if state == "online":
        return None
    heard = "has never asked for work" if seen_at is None else f"was last heard from at {format_time(seen_at)}"
    return (f"waits for lab {lab}'s agent, which {heard}: the command runs when the agent is back "
            f"(lablease-agent in that lab; see GET /api/v1/labs)")
