"""`lablease reserve --wait`: join the queue when the system is taken, and (with --block) stay until granted.

Without --block the command answers at once, like any reserve: the reservation (active when a
system was free) or its place in the line and estimated start. With --block (or --timeout) it
polls `GET /reservations/{id}` every --interval until the reservation is active; on a timeout or
Ctrl-C the reservation stays in the line, and the message says how to leave it.
"""
from __future__ import annotations

import json

from . import client_jobs
from .client_commands import Outcome, body
from .client_http import Api, ClientError
from .client_status import ExitStatus
from .client_views import RESERVATION


def reserve_waiting(api: Api, args) -> Outcome:
    requires = _requires(args.requires)
    reservation = api.post("/reservations", body(
        wait=True, system=args.system, requires=requires, pools=args.pool or None, priority=args.priority,
        duration=args.duration, heartbeat=args.heartbeat, take_by=args.take_by, return_loan=args.return_loan,
        request_id=args.request_id, healthy_within=args.healthy_within, purpose=args.purpose,
        force=args.force or None))
    if reservation.get("state") == "waiting" and (args.block or args.timeout is not None):
        reservation = wait_until_granted(api, reservation, args.timeout, args.interval)
    if reservation.get("state") == "waiting":
        return Outcome(reservation, RESERVATION, waiting_line(reservation))
    return Outcome(reservation, RESERVATION)


def waiting_line(reservation: dict) -> str:
    estimate = reservation.get("estimated_start") or "unknown"
    return (f"reservation {reservation['id']} waits: position {reservation.get('position')}, "
            f"estimated start {estimate} (`lablease return {reservation['id']}` leaves the line)")


def _requires(text: str | None):
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError as error:
        raise ClientError(f"--requires: not JSON ({error})", ExitStatus.USAGE) from None


def wait_until_granted(api: Api, reservation: dict, timeout: float | None, interval: float) -> dict:
    """The reservation once granted; ClientError when it was cancelled or time runs out (it stays queued)."""
    deadline = None if timeout is None else client_jobs.monotonic() + timeout
    try:
        while reservation.get("state") == "waiting":
            if deadline is not None and client_jobs.monotonic() >= deadline:
                raise ClientError(f"not granted after {client_jobs.seconds_text(timeout)}: "
                                  + waiting_line(reservation), ExitStatus.TIMED_OUT)
            pause = interval if deadline is None else max(0.0, min(interval, deadline - client_jobs.monotonic()))
            client_jobs.sleep(pause)
            reservation = api.get(f"/reservations/{reservation['id']}")
    except KeyboardInterrupt:
        raise ClientError("interrupted; " + waiting_line(reservation), ExitStatus.INTERRUPTED) from None
    if reservation.get("state") != "active":
        raise ClientError(f"reservation {reservation['id']} was {reservation.get('state')} before it was granted",
                          ExitStatus.ENDED)
    return reservation
