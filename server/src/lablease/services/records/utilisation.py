"""Utilisation per pool and hour: aggregated by the worker once per closed hour, read by reports.

`aggregate` continues from the last hour stored (pool 0, every system), at most BATCH hours a
call, so a new or long-stopped server catches up over a few worker passes; a fresh database
starts BACKFILL before now (or at its first system). Reports only add stored hours up: they
never look at bookings (Beaker dropped its utilisation graph for computing it per request).
"""
from __future__ import annotations

from collections import defaultdict
from datetime import datetime, timedelta

from sqlalchemy import and_, func, or_, select

from ...domain import utilisation as rules
from ...domain.errors import Invalid
from ...domain.times import format_time
from ...store.report_tables import UtilisationHour
from ...store.tables import Booking, Pool, PoolSystem, System, UsageChange

ALL = 0  # the pool_id of "every system"
BATCH = 48
BACKFILL = timedelta(days=31)
KINDS = ("recipe", "reservation", "ar")  # the bookings of a system's own calendar


def aggregated_until(uow) -> datetime | None:
    """The end of the last hour aggregated (None: nothing yet)."""
    last = uow.session.execute(select(func.max(UtilisationHour.hour)).where(UtilisationHour.pool_id == ALL)).scalar()
    return last + rules.HOUR if last else None


def next_hour(uow, now: datetime) -> datetime | None:
    """When `aggregate` has work: now if an hour is waiting, else when the current hour closes."""
    start = aggregated_until(uow) or _first_hour(uow, now)
    if start is None:
        return None  # no system yet
    return now if start < rules.floor_hour(now) else start + rules.HOUR


def _first_hour(uow, now: datetime) -> datetime | None:
    first_system = uow.session.execute(select(func.min(System.created_at))).scalar()
    if first_system is None:
        return None
    return rules.floor_hour(max(first_system, now - BACKFILL))


def aggregate(uow, now: datetime) -> int:
    """Aggregate the next closed hours (at most BATCH); returns how many."""
    session = uow.session
    start = aggregated_until(uow) or _first_hour(uow, now)
    if start is None:
        return 0
    hours = min(BATCH, int((rules.floor_hour(now) - start) / rules.HOUR))
    if hours <= 0:
        return 0
    end = start + hours * rules.HOUR
    systems = session.execute(select(System.id, System.resource_id, System.created_at, System.condition)
                              .where(System.created_at < end)).all()
    pools = defaultdict(list)
    for pool_id, system_id in session.execute(select(PoolSystem.pool_id, PoolSystem.system_id)):
        pools[system_id].append(pool_id)
    conditions, changes = _conditions(uow, start, end)
    booked = _booked(uow, start, end)
    sums: dict[int, list] = defaultdict(lambda: [[dict.fromkeys(rules.CATEGORIES, 0.0), 0] for _ in range(hours)])
    for system_id, resource_id, created_at, condition in systems:
        per_hour = rules.seconds_by_hour(start, hours, created_at, conditions.get(system_id, condition),
                                         changes.get(system_id, []), booked.get(resource_id, []))
        for pool_id in [ALL, *pools.get(system_id, [])]:
            for index, seconds in enumerate(per_hour):
                if any(seconds.values()):
                    cell = sums[pool_id][index]
                    cell[1] += 1
                    for category, value in seconds.items():
                        cell[0][category] += value
    sums[ALL]  # every hour has a row for every system, even with no system counted: the progress mark
    session.add_all(UtilisationHour(pool_id=pool_id, hour=start + index * rules.HOUR, systems=count, **seconds)
                    for pool_id, cells in sums.items() for index, (seconds, count) in enumerate(cells)
                    if count or pool_id == ALL)
    return hours


def _conditions(uow, start: datetime, end: datetime) -> tuple[dict, dict]:
    """Each system's condition at start (when any change records it) and its changes in [start, end)."""
    session = uow.session
    latest = select(UsageChange.system_id, func.max(UsageChange.id).label("id")).where(
        UsageChange.field == "condition", UsageChange.at <= start).group_by(UsageChange.system_id).subquery()
    at_start = dict(session.execute(select(UsageChange.system_id, UsageChange.new).join(
        latest, UsageChange.id == latest.c.id)).all())
    changes: dict[int, list] = defaultdict(list)
    later = session.execute(select(UsageChange.system_id, UsageChange.at, UsageChange.old, UsageChange.new).where(
        UsageChange.field == "condition", UsageChange.at > start).order_by(UsageChange.at, UsageChange.id))
    for system_id, at, old, new in later:
        at_start.setdefault(system_id, old)  # no change before: what the first later one changed from
        if at < end:
            changes[system_id].append((at, new))
    return at_start, changes


def _booked(uow, start: datetime, end: datetime) -> dict[int, list]:
    found: dict[int, list] = defaultdict(list)
    rows = uow.session.execute(select(Booking.resource_id, Booking.kind, Booking.start_at, Booking.end_at).where(
        Booking.kind.in_(KINDS), Booking.start_at < end, or_(Booking.end_at.is_(None), Booking.end_at > start)))
    for resource_id, kind, begin, finish in rows:
        found[resource_id].append(rules.Booked(kind, begin, finish))
    return found


def report(uow, pool: str | None, start: datetime, end: datetime, per: str) -> dict:
    """The stored hours of [start, end) added up per hour or day, with their total and figures."""
    session = uow.session
    rules.check_period(start, end, per)
    pool_id = ALL
    if pool:
        pool_id = session.execute(select(Pool.id).where(Pool.name == pool)).scalar_one_or_none()
        if pool_id is None:
            raise Invalid("pool", f"no pool named {pool}")
    rows = session.execute(select(UtilisationHour).where(and_(
        UtilisationHour.pool_id == pool_id, UtilisationHour.hour >= start, UtilisationHour.hour < end))
        .order_by(UtilisationHour.hour)).scalars()
    buckets: dict[datetime, dict] = {}
    total = dict.fromkeys(rules.CATEGORIES, 0.0)
    for row in rows:
        at = rules.bucket_start(row.hour, per)
        bucket = buckets.setdefault(at, dict.fromkeys(rules.CATEGORIES, 0.0) | {"systems": 0})
        bucket["systems"] = max(bucket["systems"], row.systems)
        for category in rules.CATEGORIES:
            bucket[category] += getattr(row, category)
            total[category] += getattr(row, category)
    return {"pool": pool, "from": format_time(start), "until": format_time(end), "per": per,
            "aggregated_until": format_time(aggregated_until(uow)),
            "buckets": [{"at": format_time(at), **values} for at, values in buckets.items()],
            "total": total, "figures": rules.figures(total)}
