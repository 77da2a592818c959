"""System usage and condition history, and utilisation over a period."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from ..domain.systems import USAGES
from ..store.tables import Pool, System, UsageChange
from ..timeparse import format_time


def set_usage(session, system: System, usage: str, now: datetime) -> None:
    if system.usage != usage:
        session.add(UsageChange(system_id=system.id, at=now, field="usage", old=system.usage, new=usage))
        system.usage = usage


def record_condition(session, system: System, old: str, now: datetime) -> None:
    session.add(UsageChange(system_id=system.id, at=now, field="condition", old=old, new=system.condition))


def _state_at(session, system_id: int, field: str, moment: datetime, default: str) -> str:
    row = session.execute(select(UsageChange.new).where(
        UsageChange.system_id == system_id, UsageChange.field == field, UsageChange.at <= moment)
        .order_by(UsageChange.at.desc(), UsageChange.id.desc()).limit(1)).scalar_one_or_none()
    return row or default


def time_in_states(session, system: System, start: datetime, end: datetime) -> dict[str, float]:
    """Seconds the system spent in each usage state within [start, end)."""
    state = _state_at(session, system.id, "usage", start, "idle")
    changes = session.execute(select(UsageChange).where(
        UsageChange.system_id == system.id, UsageChange.field == "usage", UsageChange.at > start,
        UsageChange.at < end).order_by(UsageChange.at, UsageChange.id)).scalars()
    seconds = dict.fromkeys(USAGES, 0.0)
    cursor = start
    for change in changes:
        seconds[state] += (change.at - cursor).total_seconds()
        state, cursor = change.new, change.at
    seconds[state] += (end - cursor).total_seconds()
    return seconds


def history(session, system: System, start: datetime | None, end: datetime | None) -> list[dict]:
    query = select(UsageChange).where(UsageChange.system_id == system.id).order_by(UsageChange.at, UsageChange.id)
    if start:
        query = query.where(UsageChange.at >= start)
    if end:
        query = query.where(UsageChange.at < end)
    return [{"at": format_time(c.at), "field": c.field, "old": c.old, "new": c.new}
            for c in session.execute(query).scalars()]


def _share_busy(seconds: dict[str, float]) -> float:
    total = sum(seconds.values())
    return round((total - seconds["idle"] - seconds["pending"]) / total, 4) if total else 0.0


def utilisation(session, start: datetime, end: datetime, pool: str | None = None) -> dict:
    query = select(System).where(System.condition != "removed").order_by(System.fqdn)
    if pool:
        query = query.where(System.pools.any(Pool.name == pool))
    systems = []
    totals = dict.fromkeys(USAGES, 0.0)
    for system in session.execute(query).unique().scalars():
        seconds = time_in_states(session, system, start, end)
        for state, value in seconds.items():
            totals[state] += value
        systems.append({"fqdn": system.fqdn, "seconds": seconds, "busy": _share_busy(seconds)})
    return {"from": format_time(start), "until": format_time(end), "pool": pool, "systems": systems,
            "total": {"seconds": totals, "busy": _share_busy(totals)}}
