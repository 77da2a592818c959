"""`lablease-server status`: what an operator checks first, in a few lines.

Liveness and readiness are asked of the running server over HTTP (what a load
balancer or an orchestrator sees); the queues are read from the database.
"""
from __future__ import annotations

from datetime import datetime

import requests

from ..config import Settings
from ..domain.times import format_human, format_when
from ..services.records import due
from ..services.reads import monitoring
from ..services.handlers import unit_of_work
from ..store.db import Database


def _ask(url: str) -> tuple[int | None, dict | str]:
    try:
        response = requests.get(url, timeout=5)
    except requests.RequestException as error:
        return None, f"no answer ({type(error).__name__})"
    try:
        return response.status_code, response.json()
    except ValueError:
        return response.status_code, response.text[:200]


def _seconds(value: float) -> str:
    """A length as people read it everywhere (`1h59m58s`, `0.4s`); the API and --json keep ISO 8601."""
    return format_human(int(value)) if value >= 1 else f"{value:.1f}s"


def probes(base_url: str) -> tuple[list[str], bool]:
    status, body = _ask(base_url + "/api/v1/health")
    lines = [f"liveness:  {'ok' if status == 200 else body if status is None else f'HTTP {status}'}"
             f" ({base_url}/api/v1/health)"]
    status, body = _ask(base_url + "/api/v1/ready")
    if status == 200 and isinstance(body, dict) and body.get("status") == "degraded":  # a lab's agent is silent
        lines.append(f"readiness: degraded: {body['checks'].get('labs')}")
    elif status == 200:
        lines.append("readiness: ready")
    elif isinstance(body, dict):
        lines.append(f"readiness: {body.get('detail', body)}")
    else:
        lines.append(f"readiness: {body if status is None else f'HTTP {status}'}")
    return lines, status == 200


def queues(settings: Settings, now: datetime) -> list[str]:
    from ..worker.loop import DUE_STEPS  # what the worker does when its time comes

    db = Database(settings.database)
    try:
        with unit_of_work(db, settings, write=False) as uow:
            data = monitoring.snapshot(uow, now)
            items = [(item[1], step.kind, item[0]) for step in DUE_STEPS if (item := due.next_item(uow, step))]
    finally:
        db.dispose()
    queue, commands, outbox = data["recipe_queue"], data["commands"], data["outbox"]
    lines = [f"recipe queue: {queue['depth']} queued" +
             (f", oldest waiting {_seconds(queue['oldest_seconds'])}" if queue["depth"] else ""),
             f"commands: {commands['queued']} queued, {commands['running']} running",
             f"outbox: {outbox['backlog']} waiting" +
             (f", oldest {_seconds(outbox['oldest_seconds'])}" if outbox["backlog"] else "")]
    if not items:
        return lines + ["oldest due item: none"]
    at, kind, ident = min(items)
    late = (now - at).total_seconds()
    when = f"overdue by {_seconds(late)}" if late > 0 else f"in {_seconds(-late)}"
    return lines + [f"oldest due item: {kind} {ident} at {format_when(at)} ({when})"]


def report(settings: Settings, base_url: str, now: datetime) -> tuple[list[str], bool]:
    lines, ready = probes(base_url.rstrip("/"))
    return lines + queues(settings, now), ready
