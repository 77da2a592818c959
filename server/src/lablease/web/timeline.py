"""Timelines on the pages: a system's (included in its page) and a pool's (/pools/<name>).

The window comes from the query string: `span` (1d, 7d, 30d) or explicit `start` and `end`
(a browser's datetime-local value is UTC, as the pages show times). The chart's geometry is
domain/timeline.py; templates/timeline_chart.html only emits it as inline SVG and a table.
"""
from __future__ import annotations

from urllib.parse import urlencode

from ..domain import timeline as rules
from ..services.reads import timeline as service
from .context import PageContext
from .views import forms

WINDOW_FIELDS = {"start": "time", "end": "time"}


def window(ctx: PageContext):
    """The window asked for, and the values to show back in the form."""
    chosen = forms.filters(ctx.query, WINDOW_FIELDS)
    span = forms.text(ctx.query, "span")
    start, end = rules.window(span, chosen.get("start"), chosen.get("end"), ctx.now)
    return start, end, {"span": span or ("" if chosen else "7d"), "start": ctx.query.get("start", ""),
                        "end": ctx.query.get("end", "")}


def values(chart: rules.Chart, asked: dict, path: str) -> dict:
    """What timeline_chart.html needs: the chart, the kinds' legend, the window form and quick-span links."""
    return {"chart": chart, "kinds": [(k, rules.KIND_LABELS[k]) for k in rules.KINDS], "asked": asked,
            "spans": [(span, path + "?" + urlencode({"span": span})) for span in rules.SPANS], "path": path}


def system_timeline(ctx: PageContext, fqdn: str) -> dict | None:
    start, end, asked = window(ctx)
    chart = service.for_system(ctx.uow, ctx.actor, ctx.now, fqdn, start, end)
    return values(chart, asked, ctx.path.split("?")[0])
