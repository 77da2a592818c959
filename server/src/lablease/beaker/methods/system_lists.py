"""Beaker's system lists (bkr system-list): /bkr/, /bkr/available, /bkr/free, /bkr/mine, /bkr/removed with
?tg_format=atom, searches `systemsearch-N.table/.operation/.value` and `xmlsearch` (hostRequires elements).

bkr reads the entries' titles of the Atom feed: one fqdn each. The search tables bkr sends are System/Arch,
System/Pools, System/Status and System/Type, always with the operation `is`; the device tables are refused.
"""
from __future__ import annotations

import re
from xml.sax.saxutils import escape

from werkzeug.wrappers import Response

from ...domain.errors import Invalid
from ...jobxml.parse import parse_job_xml
from ...services.reads import overview
from ..call import Call
from ..registry import NotSupported, rest

ATOM = "http://www.w3.org/2005/Atom"
SEARCH = re.compile(r"systemsearch-(\d+)\.(table|operation|value)$")
# Beaker's search tables and the listing filter (services/catalog/systems.py `filtered`) each one is
TABLES = {"System/Arch": "arch", "System/Pools": "pool", "System/Status": "condition", "System/Type": "type"}


def searches(call: Call) -> tuple[dict, str | None]:
    """(filters for services.catalog.systems.filtered, the system type) from the systemsearch-N.* query fields."""
    rows: dict[str, dict] = {}
    for key, value in call.query.items():
        match = SEARCH.match(key)
        if match:
            rows.setdefault(match[1], {})[match[2]] = value
    filters, system_type = {}, None
    for row in rows.values():
        table, operation, value = row.get("table"), row.get("operation", "is"), row.get("value", "")
        if table not in TABLES:
            raise NotSupported(f"searching {table} is not supported: lablease searches "
                               f"{', '.join(TABLES)} and hostRequires (--xml-filter)")
        if operation != "is":
            raise NotSupported(f"the search operation {operation!r} is not supported: only 'is'")
        if TABLES[table] == "type":
            system_type = value
        else:
            filters[TABLES[table]] = value.lower() if table == "System/Status" else value
    return filters, system_type


def host_filter(text: str | None) -> dict | None:
    """bkr --xml-filter: hostRequires elements (or a whole <hostRequires>), read by the job XML parser."""
    if not text or not text.strip():
        return None
    inner = text.strip()
    if not inner.startswith("<hostRequires"):
        inner = f"<hostRequires><and>{inner}</and></hostRequires>"
    try:
        job = parse_job_xml(f'<job><recipeSet><recipe>{inner}<task name="/filter"/></recipe></recipeSet></job>'
                            .encode("utf-8"))
    except Invalid as error:
        raise Invalid("xmlsearch", f"not a hostRequires filter: {error.detail}") from None
    return job["recipe_sets"][0]["recipes"][0].get("host_requires")


def feed(call: Call, which: str) -> Response:
    filters, system_type = searches(call)
    fqdns = overview.systems_for(call.uow, call.user, call.now, which, filters, system_type,
                                 host_filter(call.query.get("xmlsearch")))
    updated = call.now.strftime("%Y-%m-%dT%H:%M:%SZ")
    entries = "".join(
        f"<entry><title>{escape(fqdn)}</title><id>{escape(call.base_url)}/view/{escape(fqdn)}</id>"
        f"<updated>{updated}</updated></entry>" for fqdn in fqdns)
    body = (f'<?xml version="1.0" encoding="utf-8"?><feed xmlns="{ATOM}"><title>{which} systems</title>'
            f"<id>{escape(call.base_url)}/{which}</id><updated>{updated}</updated>{entries}</feed>")
    return Response(body, mimetype="application/atom+xml")


def register(path: str, which: str) -> None:
    rest("GET", path)(lambda call: feed(call, which))


for _path, _which in (("/", "all"), ("/available", "available"), ("/free", "free"), ("/mine", "mine"),
                      ("/removed", "removed")):
    register(_path, _which)
