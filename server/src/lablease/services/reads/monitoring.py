"""What operators watch in the database: gauges for /metrics, readiness, the worker's heartbeat.

Every query here is an aggregate over an index or a small table (systems),
so a scrape or a readiness probe costs a few milliseconds whatever the
history holds: finished recipes, sent messages and returned loans are
never counted.
"""
from __future__ import annotations

import os
import socket
from datetime import datetime, timedelta, timezone

from sqlalchemy import case, delete, func, select, update
from sqlalchemy.exc import SQLAlchemyError

from ...domain import commands as command_states
from ...domain.recipes import FINISHED, STATES
from ...store import migrate
from ...store.lab_tables import Lab
from ...store.provision_tables import Command
from ...store.tables import Loan, Outbox, Recipe, Reservation, System
from ...store.worker_tables import WorkerHeartbeat

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
UNFINISHED = tuple(state for state in STATES if state not in FINISHED)
# Heartbeats of workers gone this long are removed by the next worker that starts.
FORGET_AFTER = timedelta(days=1)


def _age(now: datetime, then: datetime | None) -> float:
    return max(0.0, (now - then).total_seconds()) if then is not None else 0.0


def snapshot(uow, now: datetime) -> dict:
    """Counts by state and the age of the oldest waiting item of each queue, read now."""
    session = uow.session
    starting = case((Reservation.start_at > now, "waiting"), else_="active")
    reservations = dict(session.execute(select(starting, func.count()).where(  # a queued one holds nothing yet
        Reservation.returned_at.is_(None), Reservation.system_id.is_not(None)).group_by(starting)).all())
    recipe_rows = session.execute(select(Recipe.status, func.count(), func.min(Recipe.queued_at))
                                  .where(Recipe.status.in_(UNFINISHED)).group_by(Recipe.status)).all()
    recipes = {status: count for status, count, _ in recipe_rows}
    oldest_recipe = next((oldest for status, _, oldest in recipe_rows if status == "queued"), None)
    systems = session.execute(select(System.condition, System.usage, func.count())
                              .group_by(System.condition, System.usage)).all()
    command_rows = session.execute(select(Command.status, func.count(), func.min(Command.due_at))
                                   .where(Command.status.in_(command_states.UNFINISHED))
                                   .group_by(Command.status)).all()
    # pending messages are exactly those with a next attempt time: a range on its index (SQLite's
    # planner scans the table for IS NOT NULL, not knowing how few rows have one)
    backlog, oldest_message = session.execute(select(func.count(), func.min(Outbox.created_at))
                                              .where(Outbox.next_attempt_at >= EPOCH)).one()
    loans = session.execute(select(func.count()).select_from(Loan).where(Loan.returned_at.is_(None))).scalar()
    beat = session.execute(select(func.max(WorkerHeartbeat.beat_at))).scalar()
    queued_commands = next((row for row in command_rows if row[0] == "queued"), None)
    return {
        "reservations": {"active": reservations.get("active", 0), "waiting": reservations.get("waiting", 0)},
        "loans_active": loans,
        "recipes": {state: recipes.get(state, 0) for state in UNFINISHED},
        "recipe_queue": {"depth": recipes.get("queued", 0), "oldest_seconds": _age(now, oldest_recipe)},
        "systems": [(condition, usage, count) for condition, usage, count in systems],
        "commands": {state: next((row[1] for row in command_rows if row[0] == state), 0)
                     for state in command_states.UNFINISHED},
        "command_queue_oldest_seconds": _age(now, queued_commands[2] if queued_commands else None),
        "outbox": {"backlog": backlog, "oldest_seconds": _age(now, oldest_message)},
        "worker_heartbeat_age_seconds": _age(now, beat) if beat is not None else None,
        "labs": _labs(uow, now),
    }


def _labs(uow, now: datetime) -> dict:
    """Per lab an agent serves: since when its agent is silent (None: never seen) and its unfinished commands."""
    session = uow.session
    seen = {name: (_age(now, at) if at is not None else None)
            for name, at in session.execute(select(Lab.name, Lab.agent_seen_at))}
    commands = session.execute(select(System.lab, Command.status, func.count())
                               .join(System, System.id == Command.system_id)
                               .where(Command.status.in_(command_states.UNFINISHED), System.lab.in_(list(seen)))
                               .group_by(System.lab, Command.status)).all() if seen else []
    return {"agent_seen_age_seconds": seen, "commands": commands}


def readiness(uow, now: datetime, timeout: timedelta) -> tuple[bool, dict]:
    """(ready, checks): the database answers, its schema is this code's, a worker beat within `timeout`."""
    try:
        revision = migrate.revision_on(uow.session.connection())
    except SQLAlchemyError as error:
        reason = str(getattr(error, "orig", None) or error).splitlines()[0][:200]
        return False, {"database": f"unreachable: {reason}", "schema": "unknown", "worker": "unknown"}
    head = migrate.head_revision()
    if revision != head:  # an older schema may not even have the heartbeat table
        return False, {"database": "ok", "worker": "unknown",
                       "schema": f"at revision {revision or 'none'}, this server needs {head}: "
                                 "run lablease-server init"}
    beat = uow.session.execute(select(func.max(WorkerHeartbeat.beat_at))).scalar()
    worker = "ok"
    if beat is None:
        worker = "no worker heartbeat seen"
    elif now - beat > timeout:
        worker = (f"last worker heartbeat {int(_age(now, beat))} s ago "
                  f"(worker_heartbeat_timeout: {int(timeout.total_seconds())} s)")
    return worker == "ok", {"database": "ok", "schema": "ok", "worker": worker}


def lab_agents(uow, now: datetime, silence: timedelta) -> str:
    """"ok", or the labs whose agent is silent (their commands wait): readiness then says `degraded`."""
    from ..provisioning.labs import silent  # here: labs imports the command queue, which this module does not need

    quiet = silent(uow, now, silence)
    if not quiet:
        return "ok"
    return (f"degraded: no agent heard from within {int(silence.total_seconds())} s (agent_silence_limit) for "
            f"lab(s) {', '.join(quiet)}; their power and netboot commands wait")


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"[:200]


def beat(uow, now: datetime, name: str) -> None:
    """This worker is alive: its row's time moves on (created on the first beat)."""
    done = uow.session.execute(update(WorkerHeartbeat).where(WorkerHeartbeat.worker == name).values(beat_at=now))
    if done.rowcount == 0:
        uow.session.execute(delete(WorkerHeartbeat).where(WorkerHeartbeat.beat_at < now - FORGET_AFTER))
        uow.session.add(WorkerHeartbeat(worker=name, started_at=now, beat_at=now))


def forget(uow, name: str) -> None:
    """A worker stopping cleanly takes its heartbeat with it: readiness then says no worker runs."""
    uow.session.execute(delete(WorkerHeartbeat).where(WorkerHeartbeat.worker == name))
