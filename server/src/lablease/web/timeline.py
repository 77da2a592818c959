"""The timeline shown on a system's page (templates/timeline.html): web-views fills this in.

`system_timeline(ctx, fqdn)` returns what timeline.html needs (None: the page shows the history table).
"""
from __future__ import annotations

from .context import PageContext


def system_timeline(ctx: PageContext, fqdn: str) -> dict | None:
    return None
