"""Keeping people's holds in bounds (domain/holds.py decides): a pool's floor of idle Automated
systems for the scheduler, a required purpose, a maximum total hold per user.

The reserve and lend use cases call these hooks after they hold their lock, so the count and the
write are one atomic step: SQLite's write lock (BEGIN IMMEDIATE) covers the whole database; on
PostgreSQL each floored pool's row is locked FOR UPDATE (in id order, so two requests never wait on
each other in a circle), and the user's row for the maximum hold. Under READ COMMITTED the counts read
after the lock see what the request that held it before committed.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import Integer, cast, select

from ...domain import holds as rules
from ...domain.errors import Conflict
from ...domain.permissions import Actor
from ...domain.windows import Window
from ...store import calendar
from ...store.tables import Pool, Reservation, System, User
from ..catalog.systems import active_loans

INSTANT = timedelta(microseconds=1)


def _lock(uow, table, ids: list[int]) -> None:
    session = uow.session
    uow.start_writing()  # SQLite: BEGIN IMMEDIATE, the whole database
    if ids and session.get_bind().dialect.name == "postgresql":
        for ident in sorted(ids):
            session.execute(select(table.id).where(table.id == cast(ident, Integer)).with_for_update())


def _idle(uow, members: list[System], now: datetime) -> set[int]:
    """The ids of the members idle for automation now (domain/holds.py idle_for_automation)."""
    lent = active_loans(uow, [m.id for m in members])
    window = Window(now, now + INSTANT)
    return {m.id for m in members
            if rules.idle_for_automation(m.condition, m.guest, m.id in lent,
                                         bool(calendar.touching(uow.session, m.resource_id, window)))}


def floor_states(uow, system: System, now: datetime) -> tuple[list[rules.FloorState], bool]:
    """The floored pools the system is in, each with its idle Automated count, and whether the
    system itself is one of them (what waits_for_floor and floor_refusal take)."""
    states, mine = [], False
    for pool in sorted((p for p in system.pools if p.automation_floor > 0), key=lambda p: p.id):
        idle = _idle(uow, list(pool.systems), now)
        mine = mine or system.id in idle
        states.append(rules.FloorState(pool.name, pool.automation_floor, len(idle)))
    return states, mine


def keep_floor(uow, actor: Actor, system: System, now: datetime, force: bool) -> None:
    """HOOK (floor): refuse a manual reservation or loan that would leave a pool the system is in
    with fewer idle Automated systems than its floor (409 naming pool, floor and idle now).
    Admins are exempt with force. Call it once the booking's lock is held."""
    states, mine = _floor_under_lock(uow, actor, system, now, force)
    for state in states:
        refusal = rules.floor_refusal(state.pool, state.floor, state.idle_automated, mine)
        if refusal:
            raise Conflict(refusal, pool=state.pool, floor=state.floor, idle=state.idle_automated)


def floor_allows(uow, actor: Actor, system: System, now: datetime, force: bool) -> bool:
    """The waiting line's side of the same rule (services/queue/waitline.py try_grant): may the system be
    granted now, or does the wait stay in the line until its pool has an idle Automated system to spare?
    Same lock and count as keep_floor, so a storm of grants never takes a pool below its floor."""
    return not rules.waits_for_floor(*_floor_under_lock(uow, actor, system, now, force))


def _floor_under_lock(uow, actor: Actor, system: System, now: datetime,
                      force: bool) -> tuple[list[rules.FloorState], bool]:
    """The floored pools' states read under their locks; none for an admin's force or an unfloored system."""
    floored = [p.id for p in system.pools if p.automation_floor > 0]
    if not floored or (force and actor.is_admin):
        return [], False
    _lock(uow, Pool, floored)
    return floor_states(uow, system, now)  # bookings and loans read afresh, under the lock


def current_hold(uow, user_id: int, now: datetime, exclude: int | None = None) -> timedelta | None:
    """The user's open manual reservations' remaining time (None: one has no end)."""
    query = select(Reservation.start_at, Reservation.end_at).where(
        Reservation.user_id == user_id, Reservation.kind == "manual", Reservation.returned_at.is_(None))
    if exclude is not None:
        query = query.where(Reservation.id != exclude)
    return rules.total_hold([rules.remaining(start, end, now) for start, end in uow.session.execute(query)])


def keep_max_hold(uow, user_id: int, now: datetime, asked: timedelta | None,
                  exclude: int | None = None) -> None:
    """HOOK (max hold): refuse a reservation (or an extension: pass the reservation as `exclude` and
    its new remaining time as `asked`) that would take the user's total hold past max_hold_per_user."""
    settings = uow.settings
    limit = getattr(settings, "max_hold_per_user", None)
    if limit is None:
        return
    _lock(uow, User, [user_id])
    total = current_hold(uow, user_id, now, exclude)
    refusal = rules.hold_refusal(limit, total, asked)
    if refusal:
        raise Conflict(refusal, limit=int(limit.total_seconds()),
                           current_total=None if total is None else int(total.total_seconds()))


def purpose_of(settings, purpose: str | None) -> str | None:
    """HOOK (purpose): the stripped purpose, or 422 naming `purpose` where the site requires one."""
    return rules.check_purpose(purpose, bool(getattr(settings, "require_purpose", False)))
