"""System usage and condition history, and utilisation over a period."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from ...domain import usage as rules
from ...domain.errors import Invalid
from ...domain.systems import USAGES
from ...domain.times import format_time
from ...store.tables import Pool, System, UsageChange


def set_usage(uow, system: System, usage: str, now: datetime) -> None:
    if system.usage != usage:
        uow.session.add(UsageChange(system_id=system.id, at=now, field="usage", old=system.usage, new=usage))
        system.usage = usage


def record_condition(uow, system: System, old: str, now: datetime) -> None:
    uow.session.add(UsageChange(system_id=system.id, at=now, field="condition", old=old, new=system.condition))


def _state_at(uow, system: System, field: str, moment: datetime) -> str:
    """The system's usage or condition at a moment: the last change up to it, else what the first later
    change changed from, else what it is now."""
    session = uow.session
    last = session.execute(select(UsageChange.new).where(
        UsageChange.system_id == system.id, UsageChange.field == field, UsageChange.at <= moment)
        .order_by(UsageChange.at.desc(), UsageChange.id.desc()).limit(1)).scalar_one_or_none()
    if last is not None:
        return last
    first_later = session.execute(select(UsageChange.old).where(
        UsageChange.system_id == system.id, UsageChange.field == field, UsageChange.at > moment)
        .order_by(UsageChange.at, UsageChange.id).limit(1)).scalar_one_or_none()
    return first_later or (system.usage if field == "usage" else system.condition)


def time_in_states(uow, system: System, start: datetime, end: datetime) -> dict[str, float]:
    """Seconds the system spent in each usage state within [start, end), while it existed."""
    rules.check_period(start, end)
    moment = max(start, system.created_at)
    changes = uow.session.execute(select(UsageChange).where(
        UsageChange.system_id == system.id, UsageChange.at > moment, UsageChange.at < end)
        .order_by(UsageChange.at, UsageChange.id)).scalars()
    return rules.time_in_states(system.created_at, _state_at(uow, system, "usage", moment),
                                _state_at(uow, system, "condition", moment),
                                [rules.Change(c.at, c.field, c.new) for c in changes], start, end)


def history(uow, system: System, start: datetime | None, end: datetime | None) -> list[dict]:
    query = select(UsageChange).where(UsageChange.system_id == system.id).order_by(UsageChange.at, UsageChange.id)
    if start:
        query = query.where(UsageChange.at >= start)
    if end:
        query = query.where(UsageChange.at < end)
    return [{"at": format_time(c.at), "field": c.field, "old": c.old, "new": c.new}
            for c in uow.session.execute(query).scalars()]


def utilisation(uow, start: datetime, end: datetime, pool: str | None = None) -> dict:
    """Per system that existed during the period (and is in the pool), and in total."""
    session = uow.session
    rules.check_period(start, end)
    query = select(System).where(System.created_at < end).order_by(System.fqdn)
    if pool:
        pool_id = session.execute(select(Pool.id).where(Pool.name == pool)).scalar_one_or_none()
        if pool_id is None:
            raise Invalid("pool", f"no pool named {pool}")
        query = query.where(System.pools.any(Pool.id == pool_id))
    systems = []
    totals = dict.fromkeys(USAGES, 0.0)
    for system in session.execute(query).unique().scalars():
        seconds = time_in_states(uow, system, start, end)
        if system.condition == "removed" and not any(seconds.values()):
            continue  # removed before the period began
        for state, value in seconds.items():
            totals[state] += value
        systems.append({"fqdn": system.fqdn, "seconds": seconds, "busy": rules.share_busy(seconds)})
    return {"from": format_time(start), "until": format_time(end), "pool": pool, "systems": systems,
            "total": {"seconds": totals, "busy": rules.share_busy(totals)}}
