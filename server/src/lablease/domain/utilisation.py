"""Utilisation by the hour: how a system's time splits into recipe, manual, idle and broken.

The worker aggregates closed hours once (services/records/utilisation.py); pages and the API only
add the stored hours up. For each moment the category is, in this order of precedence:
not counted while the system did not exist or was `removed`; `broken` while its condition
was broken; `recipe` while a recipe run booked it; `manual` while a reservation or an
advance reservation booked it (people held it); `idle` otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from .errors import Invalid
from .times import format_time

CATEGORIES = ("recipe", "manual", "idle", "broken")
HOUR = timedelta(hours=1)
PERIODS = {"day": timedelta(days=1), "hour": HOUR}
MAX_BUCKETS = 24 * 93  # a quarter by the hour


@dataclass(frozen=True)
class Booked:
    kind: str  # the booking's kind: recipe, reservation, ar
    start: datetime
    end: datetime | None


def floor_hour(moment: datetime) -> datetime:
    return moment.replace(minute=0, second=0, microsecond=0)


def _category(condition: str, booked: list[Booked], moment: datetime) -> str | None:
    if condition == "removed":
        return None
    if condition == "broken":
        return "broken"
    kinds = {b.kind for b in booked if b.start <= moment and (b.end is None or b.end > moment)}
    if "recipe" in kinds:
        return "recipe"
    return "manual" if kinds else "idle"


def seconds_by_hour(start: datetime, hours: int, created_at: datetime, condition: str,
                    changes: list[tuple[datetime, str]], booked: list[Booked]) -> list[dict[str, float]]:
    """Seconds per category in each of `hours` hours from `start` (a whole hour).

    condition: the system's condition at `start`; changes: (when, new condition) after it, in order.
    Between two consecutive moments where something changes the category is constant, so the
    sweep only looks at those moments.
    """
    end = start + hours * HOUR
    points = {start, end, max(start, min(created_at, end))}
    points.update(at for at, _ in changes if start < at < end)
    for b in booked:
        points.update(t for t in (b.start, b.end) if t is not None and start < t < end)
    points.update(start + i * HOUR for i in range(1, hours))
    out = [dict.fromkeys(CATEGORIES, 0.0) for _ in range(hours)]
    pending = iter(changes)
    upcoming = next(pending, None)
    ordered = sorted(points)
    for left, right in zip(ordered, ordered[1:]):
        while upcoming is not None and upcoming[0] <= left:
            condition = upcoming[1]
            upcoming = next(pending, None)
        if left < created_at:
            continue
        category = _category(condition, booked, left)
        if category:
            out[int((left - start) / HOUR)][category] += (right - left).total_seconds()
    return out


def check_period(start: datetime, end: datetime, per: str) -> None:
    if per not in PERIODS:
        raise Invalid("per", f"must be one of {', '.join(PERIODS)}")
    if start >= end:
        raise Invalid("until", f"must be after from ({format_time(start)})")
    if (end - start) / HOUR > MAX_BUCKETS:
        raise Invalid("until", f"a report covers at most {MAX_BUCKETS // 24} days")


def bucket_start(hour: datetime, per: str) -> datetime:
    return hour if per == "hour" else hour.replace(hour=0)


def figures(total: dict[str, float]) -> dict[str, float]:
    """The cards: the share of counted time in use (recipe + manual), on recipes, and broken."""
    counted = sum(total.get(c, 0.0) for c in CATEGORIES)

    def share(value: float) -> float:
        return round(value / counted, 4) if counted else 0.0

    return {"busy": share(total.get("recipe", 0.0) + total.get("manual", 0.0)),
            "recipe": share(total.get("recipe", 0.0)), "broken": share(total.get("broken", 0.0)),
            "system_hours": round(counted / 3600, 1)}


@dataclass(frozen=True)
class Segment:
    category: str
    y: float
    height: float
    seconds: float


@dataclass(frozen=True)
class Column:
    at: str
    x: float
    width: float
    segments: tuple[Segment, ...]


def stacked(buckets: list[dict], width: float, height: float) -> list[Column]:
    """One column per bucket, its categories stacked from the bottom in CATEGORIES order, all columns
    on one scale (the fullest bucket fills the height), with a gap of a fifth of a column between."""
    if not buckets:
        return []
    fullest = max(sum(b[c] for c in CATEGORIES) for b in buckets) or 1.0
    step = width / len(buckets)
    columns = []
    for index, bucket in enumerate(buckets):
        top, segments = height, []
        for category in CATEGORIES:
            size = height * bucket[category] / fullest
            top -= size
            if size > 0:
                segments.append(Segment(category, round(top, 2), round(size, 2), bucket[category]))
        columns.append(Column(bucket["at"], round(index * step + step * 0.1, 2), round(step * 0.8, 2),
                              tuple(segments)))
    return columns
