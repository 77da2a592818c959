"""/utilisation: per pool, stacked bars per day or hour, figure cards, a period selector and a CSV export.

Everything comes from the hours the worker aggregated (services/records/utilisation.py, as
GET /api/v1/reports/utilisation/series); nothing is computed from bookings per request.
"""
import csv as csv_module
import io
from datetime import timedelta

from werkzeug.wrappers import Response

from ...domain import utilisation as rules
from ...services.catalog import pools
from ...services.records import utilisation
from ..context import PageContext
from . import forms

PERIODS = {"1d": timedelta(days=1), "7d": timedelta(days=7), "30d": timedelta(days=30), "90d": timedelta(days=90)}
CHART = (760.0, 220.0)  # the bars' area, in SVG units


def _report(ctx: PageContext) -> tuple[dict, dict]:
    chosen = forms.filters(ctx.query, {"from": "time", "until": "time"})
    period = ctx.query.get("period") if ctx.query.get("period") in PERIODS else "7d"
    until = chosen.get("until") or rules.floor_hour(ctx.now)
    start = chosen.get("from") or until - PERIODS[period]
    per = ctx.query.get("per") or ("hour" if until - start <= timedelta(days=2) else "day")
    pool = forms.text(ctx.query, "pool")
    asked = {"pool": pool or "", "per": per, "period": "" if chosen else period,
             "from": ctx.query.get("from", ""), "until": ctx.query.get("until", "")}
    return utilisation.report(ctx.uow, pool, start, until, per), asked


def show(ctx: PageContext):
    report, asked = _report(ctx)
    columns = rules.stacked(report["buckets"], *CHART)
    return ctx.render("utilisation.html", report=report, asked=asked, columns=columns, chart=CHART,
                      categories=rules.CATEGORIES, periods=list(PERIODS), pools=pools.summaries(ctx.uow),
                      csv_query=ctx.path.partition("?")[2])


def csv(ctx: PageContext):
    report, _ = _report(ctx)
    out = io.StringIO()
    writer = csv_module.writer(out)
    writer.writerow(["start", "systems", *[f"{c}_seconds" for c in rules.CATEGORIES]])
    for bucket in report["buckets"]:
        writer.writerow([bucket["at"], bucket["systems"], *[round(bucket[c]) for c in rules.CATEGORIES]])
    name = f"utilisation-{report['pool'] or 'all'}-{report['per']}.csv"
    return Response(out.getvalue(), content_type="text/csv; charset=utf-8",
                    headers={"Content-Disposition": f'attachment; filename="{name}"'})

