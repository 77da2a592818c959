"""Labs and their agents: the agent's take (a long poll) and report; the labs as people see them."""
from __future__ import annotations

import time
from datetime import timedelta

from ...domain.labs import poll_wait
from ...services import labs
from ...services.handlers import unit_of_work
from ...store.feed_signal import POLL
from .context import Context


def take(ctx: Context) -> dict:
    """Up to `limit` of the agent's lab's commands, at once or as soon as one may run within `wait` seconds.

    Each try claims in a short writing transaction of its own; between tries the request holds no
    database connection and probes (reads only) every POLL seconds, as the event feed's long poll does.
    """
    header = ctx.headers.get("Authorization")
    lab = labs.agent_of(ctx.uow.session, header)  # refused before anything is waited for
    name, limit, version = lab.name, ctx.body.get("limit", 1), ctx.body.get("version")
    wait = poll_wait(ctx.body.get("wait", 0), ctx.settings.agent_silence_limit)
    started = time.monotonic()
    ctx.uow.session.close()
    while True:
        now = ctx.now + timedelta(seconds=time.monotonic() - started)
        with unit_of_work(ctx.uow.db, ctx.settings, ctx.uow.waker) as uow:
            lab = labs.agent_of(uow.session, header)  # revoked meanwhile: refused now
            labs.seen(uow.session, lab, now, version)
            taken = labs.take(uow, lab, now, limit)
            uow.commit()
        if taken or time.monotonic() - started >= wait:
            return {"lab": name, "commands": taken}
        while (left := wait - (time.monotonic() - started)) > 0:
            time.sleep(min(POLL, left))
            with unit_of_work(ctx.uow.db, ctx.settings, write=False) as uow:
                if labs.waiting(uow.session, name, ctx.now + timedelta(seconds=time.monotonic() - started)):
                    break


def report(ctx: Context) -> dict:
    lab = labs.agent_of(ctx.uow.session, ctx.headers.get("Authorization"))
    body = ctx.body
    return labs.report(ctx.uow, lab, ctx.now, ctx.args["id"], body["attempt"], body["outcome"], body.get("state"),
                       body.get("error"))


def listing(ctx: Context):
    return labs.listing(ctx.uow, ctx.now, ctx.settings.agent_silence_limit, ctx.page)
