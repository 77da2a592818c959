"""`lablease reserve --wait`: join the queue when the system is taken, and (with --block) stay until granted.

Without --block the command answers at once, like any reserve: the reservation (active when a
system was free) or its place in the line and estimated start. With --block (or --timeout) it
polls `GET /reservations/{id}` every --interval until the reservation is active; on a timeout the
reservation stays in the line, and the message says how to leave it. Ctrl-C or SIGTERM (a cancelled CI
job) takes it out of the line first: nobody is left to use what it would be granted.
"""
from __future__ import annotations

import json

from . import client_jobs
from .client_commands import Outcome, body, creating
from .client_http import Api, ClientError, Terminated, new_request_id, signals_held, stopped
from .client_status import ExitStatus
from .client_views import RESERVATION


def reserve_waiting(api: Api, args) -> Outcome:
    requires = _requires(args.requires)
    blocking = args.block or args.timeout is not None
    args.request_id = args.request_id or new_request_id()  # known before it is sent: a stop mid-request finds it

    def ask(request_id: str) -> dict:
        return api.post("/reservations", body(
            wait=True, system=args.system, requires=requires, pools=args.pool or None, priority=args.priority,
            duration=args.duration, heartbeat=args.heartbeat, take_by=args.take_by, return_loan=args.return_loan,
            request_id=request_id, healthy_within=args.healthy_within, purpose=args.purpose,
            force=args.force or None), idempotent=True)
    try:
        reservation = creating(args, ask)
    except (KeyboardInterrupt, Terminated) as stop:
        if not blocking:
            raise
        word, status = stopped(stop)
        raise ClientError(f"{word}; {leave_asked(api, ask, args.request_id)}", status) from None
    if blocking:  # also a retry answering one that ended: not "granted"
        reservation = confirmed(api, wait_until_granted(api, reservation, args.timeout, args.interval))
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
    """The reservation once granted; ClientError (with the reservation, for --json) when it ended first or time
    runs out (it stays queued), or when the polling failed. Ctrl-C or SIGTERM leaves the line."""
    deadline = None if timeout is None else client_jobs.monotonic() + timeout
    try:
        while reservation.get("state") == "waiting":
            if deadline is not None and client_jobs.monotonic() >= deadline:
                raise ClientError(f"not granted after {client_jobs.seconds_text(timeout)}: "
                                  + waiting_line(reservation), ExitStatus.TIMED_OUT)
            pause = interval if deadline is None else max(0.0, min(interval, deadline - client_jobs.monotonic()))
            client_jobs.sleep(pause)
            reservation = api.get(f"/reservations/{reservation['id']}")
    except (KeyboardInterrupt, Terminated) as stop:
        word, status = stopped(stop)
        raise ClientError(f"{word}; {leave_line(api, reservation)}", status) from None
    except ClientError as error:  # its id is never lost: --json prints the reservation as last seen
        error.outcome = error.outcome or shown(reservation)
        raise
    if reservation.get("state") != "active":
        raise ClientError(*ended(reservation), outcome=shown(reservation))
    return reservation


def confirmed(api: Api, reservation: dict) -> dict:
    """A blocking wait that sees its grant is the pipeline that asked, alive: it confirms the grant (as a
    heartbeat does), so `--take-by` returns only grants nobody is left to take."""
    wait = reservation.get("wait") or {}
    if not wait.get("take_by") or wait.get("confirmed_at"):
        return reservation
    try:
        return api.post(f"/reservations/{reservation['id']}/heartbeat", idempotent=True)
    except ClientError as error:  # lost between the poll and the confirmation (10): its id is printed
        error.outcome = error.outcome or shown(reservation)
        raise


def shown(reservation: dict) -> Outcome:
    """Printed on stdout before the error line, as `job submit --wait` prints its job: the id is there."""
    return Outcome(reservation, RESERVATION)


def ended(reservation: dict) -> tuple[str, ExitStatus]:
    """Why a waited-for reservation is not active: it ended in the line (8), or it was granted and lost
    between two polls (10: a missed heartbeat or take_by)."""
    ident, state = reservation["id"], reservation.get("state")
    granted = (reservation.get("wait") or {}).get("granted_at")
    if granted:
        return (f"reservation {ident} was granted {reservation.get('system')} at {granted} and is {state} since "
                f"{reservation.get('returned_at')}: the system is no longer yours", ExitStatus.LOST)
    return f"reservation {ident} was {state} before it was granted", ExitStatus.ENDED


def leave_asked(api: Api, ask, request_id: str) -> str:
    """Stopped while asking to wait: the same request again (its request id makes nothing new when the first
    arrived) says which reservation it is, and that one leaves the line."""
    with signals_held():
        try:
            reservation = ask(request_id)
        except ClientError as error:
            return (f"the wait asked with request id {request_id} may be in the line ({error.message}); "
                    "`lablease reservations` lists it")
        return leave_line(api, reservation)


def leave_line(api: Api, reservation: dict) -> str:
    """Cancel the wait (a reservation granted meanwhile is returned): nobody is left to take the system."""
    ident = reservation["id"]
    with signals_held():
        try:
            api.delete(f"/reservations/{ident}")
        except ClientError as error:
            return (f"reservation {ident} could not leave the line ({error.message}); `lablease return {ident}` "
                    "does it")
    return f"reservation {ident} left the line (returned, had it been granted meanwhile)"
