"""Labs and their agents: the agent's take (a long poll) and report; the labs as people see them."""
from __future__ import annotations

import time
from datetime import timedelta

from ...domain.labs import poll_wait
from ...services.provisioning import labs
from ...services.handlers import unit_of_work
from .context import Context


def take(ctx: Context) -> dict:
    """Up to `limit` of the agent's lab's commands now; when there is none, an empty answer as soon as one may run
    (or after `wait` seconds), and the agent asks again at once.

    Commands are claimed only at the start of a request, never after its wait: an agent that died while its
    long poll waited takes nothing (its lease would have held the command back). The claim is a short writing
    transaction of its own; while it waits the request holds no database connection and probes (reads only)
    every labs.POLL seconds, as the event feed's long poll does.
    """
    header = ctx.headers.get("Authorization")
    lab = labs.agent_of(ctx.uow, header)  # refused before anything is claimed or waited for
    name, limit, version = lab.name, ctx.body.get("limit", 1), ctx.body.get("version")
    wait = poll_wait(ctx.body.get("wait", 0), ctx.settings.agent_silence_limit)
    ctx.uow.session.close()
    with unit_of_work(ctx.uow.db, ctx.settings, ctx.uow.waker) as uow:
        lab = labs.agent_of(uow, header)
        labs.seen(uow, lab, ctx.now, version)
        taken = labs.take(uow, lab, ctx.now, limit)
        uow.commit()
    started = time.monotonic()
    while not taken and (left := wait - (time.monotonic() - started)) > 0:
        time.sleep(min(labs.POLL, left))
        with unit_of_work(ctx.uow.db, ctx.settings, write=False) as uow:
            labs.agent_of(uow, header)  # revoked meanwhile: refused now
            if labs.waiting(uow, name, ctx.now + timedelta(seconds=time.monotonic() - started)):
                break
    return {"lab": name, "commands": taken}


def report(ctx: Context) -> dict:
    lab = labs.agent_of(ctx.uow, ctx.headers.get("Authorization"))
    body = ctx.body
    return labs.report(ctx.uow, lab, ctx.now, ctx.args["id"], body["attempt"], body["outcome"], body.get("state"),
                       body.get("error"))


def listing(ctx: Context):
    return labs.listing(ctx.uow, ctx.now, ctx.settings.agent_silence_limit, ctx.page)
