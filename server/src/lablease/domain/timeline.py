"""Timeline geometry: the window a person asks for, and where each booking's bar goes.

A timeline has one row per system and one bar per booking (reservation, recipe run,
advance reservation) or loan, laid out over a window [start, end). Loans are drawn in a
thin band at the top of a row because a loan and the reservations made under it overlap
by design; the other kinds never overlap on one system (the calendar refuses it).
Everything here is pure arithmetic on given times: the web template only emits it.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from .errors import Invalid
from .times import format_time

KINDS = ("reservation", "loan", "ar", "recipe")
KIND_LABELS = {"reservation": "reservation", "loan": "loan", "ar": "advance reservation", "recipe": "recipe run"}
SPANS = {"1d": timedelta(days=1), "7d": timedelta(days=7), "30d": timedelta(days=30)}
MAX_WINDOW = timedelta(days=92)

# Pixel geometry of the chart (the SVG scales to its container through its viewBox).
LABEL_WIDTH = 190   # system names on the left
CHART_WIDTH = 760   # the time axis
RIGHT_PAD = 40      # room for the last tick's label
ROW_HEIGHT = 26
AXIS_HEIGHT = 22
LOAN_BAND = 6       # loans: a thin band at the top of the row
MIN_BAR = 2         # a short booking stays visible
TICK_STEPS = (timedelta(hours=1), timedelta(hours=3), timedelta(hours=6), timedelta(hours=12), timedelta(days=1),
              timedelta(days=2), timedelta(days=7), timedelta(days=14))
MAX_TICKS = 10


@dataclass(frozen=True)
class Span:
    """One booking or loan of a system: [start, end), end None = open-ended."""

    kind: str
    start: datetime
    end: datetime | None
    label: str
    href: str | None = None


@dataclass(frozen=True)
class Bar:
    kind: str
    x: float
    y: float
    width: float
    height: float
    title: str
    label: str
    href: str | None
    start: str
    end: str | None
    cut_left: bool   # began before the window
    cut_right: bool  # goes on after the window (or has no end)


@dataclass
class Row:
    name: str
    href: str | None
    y: float
    bars: list[Bar] = field(default_factory=list)


@dataclass(frozen=True)
class Tick:
    x: float
    label: str


@dataclass
class Chart:
    start: datetime
    end: datetime
    width: float
    height: float
    rows: list[Row]
    ticks: list[Tick]
    now_x: float | None  # None when now lies outside the window
    label_width: float = LABEL_WIDTH


def window(span: str | None, start: datetime | None, end: datetime | None, now: datetime) -> tuple[datetime, datetime]:
    """The window shown: an explicit start/end, else a span (1d, 7d, 30d; default 7d) from a little before now."""
    if start is not None or end is not None:
        length = SPANS.get(span or "7d", SPANS["7d"])
        start = start or (end - length)
        end = end or (start + length)
        if start >= end:
            raise Invalid("end", f"must be after start ({format_time(start)})")
        if end - start > MAX_WINDOW:
            raise Invalid("end", f"a timeline shows at most {MAX_WINDOW.days} days")
        return start, end
    if span is not None and span not in SPANS:
        raise Invalid("span", f"must be one of {', '.join(SPANS)}")
    length = SPANS[span or "7d"]
    begin = now - length / 7  # a seventh of the window is the recent past, the rest what is coming
    return begin, begin + length


def _x(moment: datetime, start: datetime, end: datetime) -> float:
    return LABEL_WIDTH + CHART_WIDTH * (moment - start).total_seconds() / (end - start).total_seconds()


def bar(span: Span, y: float, start: datetime, end: datetime) -> Bar | None:
    """The bar of one span inside the window, clamped to it; None when it lies outside."""
    stop = span.end if span.end is not None else end
    if span.start >= end or stop <= start:
        return None
    left, right = _x(max(span.start, start), start, end), _x(min(stop, end), start, end)
    loan = span.kind == "loan"
    until = format_time(span.end) if span.end else "open-ended"
    return Bar(kind=span.kind, x=round(left, 2), y=y + (2 if loan else LOAN_BAND + 3),
               width=round(max(right - left, MIN_BAR), 2),
               height=LOAN_BAND if loan else ROW_HEIGHT - LOAN_BAND - 6,
               title=f"{KIND_LABELS[span.kind]}: {span.label}, {format_time(span.start)} to {until}",
               label=span.label, href=span.href, start=format_time(span.start), end=format_time(span.end),
               cut_left=span.start < start, cut_right=span.end is None or span.end > end)


def ticks(start: datetime, end: datetime) -> list[Tick]:
    """Axis ticks at round times: the smallest step that gives at most MAX_TICKS of them."""
    length = end - start
    step = next((s for s in TICK_STEPS if length / s <= MAX_TICKS), TICK_STEPS[-1])
    epoch = datetime(2000, 1, 3, tzinfo=start.tzinfo)  # a Monday: weekly ticks fall on Mondays
    moment = epoch + step * -(-(start - epoch) // step)  # the first multiple of step at or after start
    shape = "%H:%M" if step < timedelta(days=1) else "%b %d"
    found = []
    while moment <= end:
        text = moment.strftime(shape)
        if step < timedelta(days=1) and moment.hour == 0:
            text = moment.strftime("%b %d")  # midnight names the day
        found.append(Tick(round(_x(moment, start, end), 2), text))
        moment += step
    return found


def layout(rows: list[tuple[str, str | None, list[Span]]], start: datetime, end: datetime, now: datetime) -> Chart:
    """rows: (system name, its link, its spans) in the order shown."""
    placed = []
    for index, (name, href, spans) in enumerate(rows):
        y = AXIS_HEIGHT + index * ROW_HEIGHT
        bars = [b for b in (bar(s, y, start, end) for s in sorted(spans, key=lambda s: s.start)) if b]
        placed.append(Row(name, href, y, bars))
    now_x = round(_x(now, start, end), 2) if start <= now <= end else None
    return Chart(start=start, end=end, width=LABEL_WIDTH + CHART_WIDTH + RIGHT_PAD,
                 height=AXIS_HEIGHT + max(len(rows), 1) * ROW_HEIGHT, rows=placed, ticks=ticks(start, end),
                 now_x=now_x)
