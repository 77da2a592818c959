"""Reserve a system (`POST /api/v1/reservations`): read the facts, decide, write — no ORM objects.

The facts are read in one statement for the system (its rules, or its policy
pool's, and its active loan), plus one for an earlier reservation with the
same request_id and one for a named advance reservation, when the request has
them. domain/reserve.py decides; the calendar is locked (SQLite: the write
lock, taken only now; PostgreSQL: the resource's row) just for the check of
the one booking that can conflict and the insert of the rows.
"""
from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

from sqlalchemy.exc import IntegrityError

from ...domain import holds as hold_rules
from ...domain import reserve as decide
from ...domain import retries
from ...domain.errors import BookingConflict, Conflict, DomainError, Invalid
from ...domain.permissions import Actor
from ...domain.reservations import ReservationPolicy
from ...store import reserve_rows as rows
from ...store.tables import System
from ..catalog import health_state
from . import holds


def reserve(uow, actor: Actor, now: datetime, policy: ReservationPolicy,
            request: decide.ReserveRequest) -> tuple[dict, bool]:
    """Book the system for the caller; returns (reservation, created).

    A request_id seen before returns that same reservation (created False),
    so a client may retry a reserve whose answer it never got; a different
    request with that id is refused (409 naming what differs).
    """
    asked = request.asked(holds.purpose_of(uow.settings, request.purpose))
    facts = read_facts(uow.session.connection(), actor, asked)
    planned = _done(decide.plan(facts, asked, policy, now, _warn(uow.settings)), now)
    if not isinstance(planned, decide.Planned):
        return planned, False
    if request.healthy_within is not None:  # rare: a health check's recency (services/lifecycle/health.py)
        health_state.require_recent(uow, uow.session.get(System, planned.system.id), request.healthy_within,
                                    now)
    uow.start_writing()  # from here to the commit: the calendar's lock
    conn = uow.session.connection()
    if uow.is_postgresql:
        rows.lock_resource(conn, planned.resource_id)
    _keep_holds(uow, actor, planned, request.advance_reservation, now, request.force)
    latest = rows.latest_before(conn, planned.resource_id, planned.window.end)
    raced = rows.previous(conn, actor.id, request.request_id)  # a retry that raced its first attempt
    outcome = _decided(conn, planned, facts, asked, now, latest, raced)
    if not isinstance(outcome, decide.ReserveWrite):
        return _done(outcome, now), False
    try:
        reservation_id = rows.write(conn, outcome, actor.id, now, uow.is_postgresql)
    except IntegrityError:  # the same request_id raced in from a retry on another connection
        raise Invalid("request_id", "was used by a concurrent request; retry to get its reservation") from None
    if reservation_id is None:  # PostgreSQL's exclusion constraint: a concurrent booking the check missed
        latest = rows.latest_before(conn, planned.resource_id, planned.window.end)
        refusal = _decided(conn, planned, facts, asked, now, latest, None)
        raise refusal if isinstance(refusal, DomainError) else Conflict(f"{planned.resource_name} was booked concurrently; retry")
    uow.wake_worker()
    return decide.answer(outcome.made(reservation_id), now), True


def _keep_holds(uow, actor: Actor, planned: decide.Planned, advance_reservation: int | None, now: datetime,
                force: bool) -> None:
    """Under the lock: a pool's floor of idle Automated systems (not inside an advance reservation: the
    system is the AR's then) and the site's maximum hold per user (services/booking/holds.py, docs/access.md)."""
    if planned.system.floored and advance_reservation is None:
        holds.keep_floor(uow, actor, uow.session.get(System, planned.system.id), now, force)
    window = planned.window
    holds.keep_max_hold(uow, actor.id, now, hold_rules.remaining(window.start, window.end, now))


def read_facts(conn, actor: Actor, asked: decide.Asked) -> decide.ReserveFacts:
    """What the decision needs: the earlier request, else the system and (if named) the advance reservation.
    An earlier request that waited in the line is another request (services/queue/wait_requests.py compares those)."""
    if (waited := rows.waited(conn, actor.id, asked.request_id)) is not None:
        retries.refuse_changed_retry(asked.request_id, f"reservation {waited}", retries.wait_mode_differs(True))
    previous = rows.previous(conn, actor.id, asked.request_id)
    if previous is not None:
        return decide.ReserveFacts(actor, None, previous)
    system = rows.system_facts(conn, asked.what.system)
    advance, groups = None, frozenset()
    if system is not None and asked.what.advance_reservation is not None:
        advance, groups = rows.advance_facts(conn, asked.what.advance_reservation, system.id, actor.group_ids)
    return decide.ReserveFacts(actor, system, None, advance, groups)


def _decided(conn, planned, facts, asked, now, latest, raced):
    """`decide.book`, with a conflicting booking's reservation id looked up for the refusal only."""
    outcome = decide.book(planned, facts, asked, now, latest, raced)
    if isinstance(outcome, BookingConflict):
        outcome = decide.book(planned, facts, asked, now, replace(latest, ref=rows.holder_ref(conn, latest)))
    return outcome


def _done(outcome, now: datetime):
    """A refusal is raised; a retry answers the reservation it made; anything else goes on."""
    if isinstance(outcome, DomainError):
        raise outcome
    if isinstance(outcome, decide.Retry):
        return decide.answer(outcome.made, now)
    return outcome


def _warn(settings) -> tuple[timedelta, timedelta]:
    return settings.warn_before, settings.warn_before_short
