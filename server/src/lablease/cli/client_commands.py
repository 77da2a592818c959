"""Handlers of `lablease systems`, `system show`, `reserve`, `extend`, `return`, `heartbeat`, `reservations`, `whoami`.

A handler takes the API and the parsed arguments, makes its calls, and
returns an Outcome; it never prints. Durations and times go to the server
as typed: the server parses them and names the field when it cannot.
"""
from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass

from .client_http import Api, ClientError, Terminated, new_request_id, segment
from .client_status import ExitStatus
from .client_views import CALENDAR, RESERVATION, SYSTEM, USER, Shape, end_time
from .output import for_people, when


@dataclass
class Outcome:
    """What a command has to show: `data` through `shape`, or `message` for people when set."""

    data: object = None
    shape: Shape | None = None
    message: str | None = None


def forced(args) -> dict | None:
    """The query string of a command with --force."""
    return {"force": "true"} if args.force else None


def in_cli_terms(error: ClientError, args, hint: str) -> ClientError:
    """A refusal that force would override, with the hint of what --force does when the server's words do not
    say it (when they say force=true, in_command_terms says --force)."""
    if error.status == ExitStatus.CONFLICT and not args.force and "force=true" not in error.message:
        error.message += f" ({hint})"
    return error


# The request's fields that a command takes under another name (an invalid field is named first in a refusal).
OPTION_OF_FIELD = {"extend_by": "--by"}


def in_command_terms(error: ClientError, args) -> str:
    """Any command's failure in the command line's words: an invalid field named as the option that sent it
    (`--by: ...`, not `extend_by: ...`), and the server's force=true as --force where the command has that option."""
    message, field = error.message, error.problem.get("field")
    if field in OPTION_OF_FIELD and message.startswith(f"{field}: ") and hasattr(args, OPTION_OF_FIELD[field][2:]):
        message = OPTION_OF_FIELD[field] + message[len(field):]
    if "force=true" in message and hasattr(args, "force"):
        message = message.replace("force=true", "--force")
    if getattr(args, "command", None) == "events":  # the feed's cursor advice, as this command takes it
        message = re.sub(r"\bafter=(\w+)", r"--after \1", message)
    return message


def body(**fields) -> dict:
    """A request body without the options that were not given."""
    return {key: value for key, value in fields.items() if value is not None and value is not False}


def creating(args, make):
    """make(request_id)'s answer: a create sent with its request id (--request-id, else a new one), so it may be
    sent again (Api: once more on a reset connection) and never makes two; when no answer came at all, the
    error names the id that gets the first one without making another."""
    request_id = args.request_id or new_request_id()
    try:
        return make(request_id)
    except ClientError as error:
        if error.status == ExitStatus.UNREACHABLE:
            error.message += (f"; it may have been made: the same command with --request-id {request_id} "
                              "answers it and never makes another")
        raise


def systems(api: Api, args) -> Outcome:
    params = {"arch": args.arch, "lab": args.lab, "pool": args.pool, "condition": args.condition,
              "free_from": args.free_from, "free_until": args.free_until,
              "reserved_by": "me" if args.mine else None, "health": args.health}
    return Outcome(api.get_all("/systems", params), SYSTEM)


def system_show(api: Api, args) -> Outcome:
    return Outcome(api.get(f"/systems/{segment(args.system)}"), SYSTEM)


def reserve(api: Api, args) -> Outcome:
    if args.wait or args.block or args.timeout is not None:  # --block and --timeout imply --wait
        from .client_waiting import reserve_waiting  # it builds on this module's Outcome and body

        return reserve_waiting(api, args)
    if args.system is None:
        raise ClientError("give the SYSTEM to reserve (or --wait with --pool/--requires)", ExitStatus.USAGE)
    reservation = creating(args, lambda request_id: api.post("/reservations", body(
        system=args.system, start=args.start, end=args.end, duration=args.duration,
        heartbeat=args.heartbeat, return_loan=args.return_loan, request_id=request_id,
        advance_reservation=args.advance_reservation, purpose=args.purpose, force=args.force or None,
        healthy_within=args.healthy_within), idempotent=True))
    return Outcome(reservation, RESERVATION)


def extend(api: Api, args) -> Outcome:
    change = {"extend_by": args.by} if args.by is not None else {"end": args.end}
    return Outcome(api.patch(f"/reservations/{args.id}", change), RESERVATION)


def give_back(api: Api, args) -> Outcome:
    api.delete(f"/reservations/{args.id}")
    reservation = api.get(f"/reservations/{args.id}")
    if not reservation.get("system"):  # it was never granted: it leaves the queue
        return Outcome(reservation, RESERVATION, f"reservation {args.id} left the queue; it no longer waits for "
                                                 f"{reservation.get('waits_for') or 'a system'}")
    return Outcome(reservation, RESERVATION, f"returned reservation {args.id} of {reservation['system']}")


def heartbeat(api: Api, args) -> Outcome:
    """One heartbeat; with --every, one every so often until stopped or until process --while-pid is gone.
    A reservation already returned exits 10 (LOST) whichever it is."""
    if args.while_pid is not None and args.every is None:
        raise ClientError("--while-pid needs --every (how often to send a heartbeat)", ExitStatus.USAGE)
    if args.while_pid is not None and not alive(args.while_pid):  # a typo'd pid would stop the heartbeats at once
        raise ClientError(f"--while-pid {args.while_pid}: no such process", ExitStatus.USAGE)
    reservation = beat(api, args.id)
    if args.every is None:
        return Outcome(reservation, RESERVATION, f"reservation {args.id}: next heartbeat due by "
                                                 f"{end_time(reservation.get('due'))}")
    from .client_jobs import monotonic, sleep  # one clock and sleep for every loop (tests replace them)

    while args.while_pid is None or alive(args.while_pid):
        beat_at = monotonic() + args.every
        while monotonic() < beat_at:  # in slices: a gone process is noticed within a second
            sleep(min(1.0, beat_at - monotonic()))
            if args.while_pid is not None and not alive(args.while_pid):
                break
        else:
            reservation = beat(api, args.id)
    return Outcome(reservation, RESERVATION, f"process {args.while_pid} is gone: no more heartbeats for "
                                             f"reservation {args.id} (the server returns it when one is missed)")


def beat(api: Api, reservation_id: int) -> dict:
    return api.post(f"/reservations/{reservation_id}/heartbeat", idempotent=True)  # twice is as good as once


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: it exists
        return True
    return True


def reservations(api: Api, args) -> Outcome:
    user = args.user or (None if args.all else "me")
    params = {"user": user, "system": args.system, "active": "true" if args.active else None}
    return Outcome(api.get_all("/reservations", params), RESERVATION)


def whoami(api: Api, args) -> Outcome:
    return Outcome(api.get("/me"), USER)


def calendar_url(api: Api, args) -> Outcome:
    """The address of my calendar feed (--new: a new one; the old one stops working)."""
    answer = api.post("/me/calendar") if args.new else api.get("/me/calendar")
    url = answer["url"]
    return Outcome(answer, CALENDAR, message=url or "no calendar address yet: make one with lablease calendar-url --new")


FOLLOW_WAIT = 20  # seconds a --follow long poll waits: below the client's answer timeout (client_http.TIMEOUT)


FOLLOW_RETRY = 5  # seconds --follow waits before asking again a server it could not reach (a restart)


def events(api: Api, args) -> Outcome:
    """The events after --after, a line each (--json: a JSON object each); --follow keeps reading from the last
    cursor, so nothing is missed or printed twice between polls, and through a restart of the server (it asks
    again until it answers); whatever ends it, the cursor to read on from is printed."""
    stream, cursor = args.environment.stdout, args.after
    while True:
        try:
            answer = _events_after(api, args, cursor)
        except ClientError as error:
            if cursor != args.after:  # a cursor the server gave (one given may be what was refused)
                error.message += f" (read on with: lablease events --after {cursor})"
            raise
        except (KeyboardInterrupt, Terminated):
            if cursor is not None:
                print(f"(read on with: lablease events --after {cursor})", file=args.environment.stderr)
            raise
        for event in answer["events"]:
            line = json.dumps(event) if args.format == "json" else (
                f"{when(event['at'])}  {event['cursor']:>6}  {event['event']:<22} {event['user']}  "
                f"{for_people(event['message'])}")
            print(line, file=stream, flush=True)
        cursor = answer["cursor"]
        if not args.follow:
            if args.format is None:
                print(f"(read on with: lablease events --after {cursor})", file=args.environment.stderr)
            return Outcome()


def _events_after(api: Api, args, cursor):
    """One read of the feed; with --follow, a server that cannot be reached is asked again (it restarts)."""
    while True:
        try:
            return api.get("/events", {"after": cursor, "wait": FOLLOW_WAIT if args.follow else None})
        except ClientError as error:
            if not args.follow or error.status != ExitStatus.UNREACHABLE:
                raise
            print(f"lablease: {error.message}; asking again in {FOLLOW_RETRY} s", file=args.environment.stderr,
                  flush=True)
            time.sleep(FOLLOW_RETRY)


def system_path(fqdn: str, rest: str = "") -> str:
    return f"/systems/{segment(fqdn)}{rest}"
