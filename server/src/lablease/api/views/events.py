"""The event feed: answered at once, after a long poll, or as a stream of server-sent events.

While it waits, a request holds no database connection: its session is closed and it sleeps on the
process's feed signal (store/feed_signal.py); each read takes a connection for one query. When the
process stops gracefully (a reload, a restart), a long poll answers what it has and a stream ends, each
a complete response, so the client resumes from its cursor on the next process.
"""
from __future__ import annotations

import json
import time

from werkzeug.datastructures import MIMEAccept
from werkzeug.http import parse_accept_header
from werkzeug.wrappers import Response

from ...services.records import feed
from ...services.handlers import unit_of_work
from .context import Context

STREAM = "text/event-stream"
STREAM_WAIT = 30  # seconds a stream stays open when the request names no wait (a client reconnects)
KEEPALIVE = 15  # seconds between comments on a quiet stream (proxies close a silent connection)


def listing(ctx: Context):
    after = feed.parse_cursor(ctx.page.after)
    resume = ctx.headers.get("Last-Event-ID")  # an EventSource reconnecting: it takes the place of after
    if resume is not None:
        after = feed.parse_cursor(resume, "Last-Event-ID")
    wait = ctx.query.get("wait")
    if parse_accept_header(ctx.headers.get("Accept"), MIMEAccept).best_match(["application/json", STREAM]) == STREAM:
        return _stream(ctx, after, STREAM_WAIT if wait is None else wait)
    events, cursor, seen = feed.read(ctx.uow, ctx.actor, after, ctx.page.limit)
    deadline = time.monotonic() + (wait or 0)
    while not events and (remaining := deadline - time.monotonic()) > 0:
        ctx.uow.session.close()  # its connection goes back to the pool while this request waits
        if not feed.wait(ctx.uow.db, seen, remaining):
            break
        events, cursor, seen = feed.read(ctx.uow, ctx.actor, cursor, ctx.page.limit)
    return {"events": events, "cursor": str(cursor)}


def _stream(ctx: Context, after, duration: float) -> Response:
    """The events as they come for `duration` seconds; an expired cursor is refused (410) before it starts."""
    events, cursor, seen = feed.read(ctx.uow, ctx.actor, after, ctx.page.limit)
    db, settings, actor, limit = ctx.uow.db, ctx.settings, ctx.actor, ctx.page.limit

    def chunks():
        nonlocal events, cursor, seen
        deadline = time.monotonic() + duration
        yield ": lablease events\n\n"
        while True:
            if events:
                yield "".join(_event(event) for event in events)
            full, events = len(events) == limit, []
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if not full and not feed.wait(db, seen, min(remaining, KEEPALIVE)):
                if feed.stopping():  # the process stops gracefully: end cleanly, the client resumes elsewhere
                    return
                yield ": still here\n\n"
                continue
            with unit_of_work(db, settings, write=False) as uow:
                events, cursor, seen = feed.read(uow, actor, cursor, limit)

    return Response(chunks(), mimetype=STREAM, headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})


def _event(event: dict) -> str:
    """One server-sent event: its id is its cursor, so an EventSource resumes after it (Last-Event-ID)."""
    return f"id: {event['cursor']}\nevent: {event['event']}\ndata: {json.dumps(event)}\n\n"
