"""A system's health as it stands (docs/health.md): its row, which check applies, when the next is due,
the hand-over gate for healthy_within, and what GET /systems shows.

Read by the scheduler, the systems' use cases and reserve; it submits nothing (services/lifecycle/health.py runs
the checks the worker finds due, and takes their outcomes), so those modules import this one without
importing jobs.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import or_, select

from ...domain import health as rules
from ...domain.errors import Conflict, Invalid
from ...domain.times import format_human, format_time
from ...store.health_tables import HealthCheck, SystemHealth
from ...store.tables import ClassCandidate, Recipe, System
from ..records import activity


def standing(uow, system: System, now: datetime) -> SystemHealth:
    """The system's health row, created (unknown since the system was added) the first time it is needed."""
    session = uow.session
    row = session.execute(select(SystemHealth).where(SystemHealth.system_id == system.id)).scalar_one_or_none()
    if row is None:
        row = SystemHealth(system_id=system.id, state="unknown", since=system.created_at or now, recipes_since=0,
                           forced=False)
        session.add(row)
        session.flush()
    return row


def applicable(uow, system: System, checks: list[HealthCheck] | None = None) -> HealthCheck | None:
    if checks is None:
        checks = list(uow.session.execute(select(HealthCheck)).unique().scalars())
    return rules.applicable([(c.scope, c.target, c) for c in checks], system.fqdn,
                            [p.name for p in system.pools], system.arch)


def refresh(uow, system: System, now: datetime, checks: list[HealthCheck] | None = None) -> SystemHealth:
    """Recompute when the system's next check is due (domain/health.py next_check_at)."""
    row = standing(uow, system, now)
    check = applicable(uow, system, checks)
    cadence = None if check is None else rules.Cadence(
        timedelta(seconds=check.every_seconds) if check.every_seconds else None, check.after_recipes)
    row.next_check_at = rules.next_check_at(rules.Standing(
        system.condition, row.state == "checking", row.forced, row.last_check_at, row.recipes_since), cadence, now)
    if row.next_check_at is not None:
        uow.wake_worker()
    return row


def refresh_all(uow, now: datetime) -> None:
    """The checks changed: every system that is given out may have a new cadence."""
    session = uow.session
    checks = list(session.execute(select(HealthCheck)).unique().scalars())
    for system in session.execute(select(System).where(System.condition != "removed", System.guest.is_(False))
                                  ).unique().scalars():
        refresh(uow, system, now, checks)


def force_check(uow, system: System, now: datetime) -> SystemHealth:
    row = standing(uow, system, now)
    row.forced = True
    return refresh(uow, system, now)


def condition_changed(uow, system: System, old: str, now: datetime) -> None:
    """Hook (services/catalog/systems.py): a system back from Broken is checked before anyone gets it."""
    if old == "broken" and system.condition == "automated":
        force_check(uow, system, now)


def install_failed(uow, system: System, now: datetime) -> None:
    """Hook (services/provisioning/installations.py): after a failed install the system is checked again."""
    if not system.guest:
        force_check(uow, system, now)


def set_state(row: SystemHealth, state: str, now: datetime) -> None:
    if row.state != state:
        row.state, row.since = state, now


def gate(uow, recipe: Recipe, ordered: list[int], now: datetime) -> list[int]:
    """Scheduler hook: of the free candidates, those with a pass within the recipe's healthy_within."""
    return _gate(uow, (recipe.spec or {}).get("healthy_within"), recipe.class_id, ordered, now,
                 ("recipe", recipe.id))


def gate_wait(uow, wait, ordered: list[int], now: datetime) -> list[int]:
    """The waiting line's hook (services/queue/waitline.py try_grant): the same rule for a waiting reservation."""
    return _gate(uow, wait.healthy_within_seconds, wait.class_id, ordered, now,
                 ("reservation", wait.reservation_id))


def _gate(uow, within: int | None, class_id: int | None, ordered: list[int], now: datetime,
          asker: tuple[str, int]) -> list[int]:
    """Of the free candidates, those with a pass within `within` seconds.

    When none has one, a check is asked for on the first free candidate a check applies to, unless one
    of the class's candidates is being checked already: one check at a time per class, never a storm.
    A failed check makes that system Broken (no longer a candidate) and retries the waiting work
    (services/lifecycle/health.py _retry_waiting), so the next candidate is checked.
    """
    session = uow.session
    if not within or not ordered:
        return ordered
    rows = {row.system_id: row for row in session.execute(
        select(SystemHealth).where(SystemHealth.system_id.in_(ordered))).scalars()}
    window = timedelta(seconds=within)
    healthy = [sid for sid in ordered if sid in rows and rules.recent(rows[sid].state, rows[sid].passed_at,
                                                                      window, now)]
    if healthy or class_id is None or _checking_for(uow, class_id):
        return healthy
    checks = list(session.execute(select(HealthCheck)).unique().scalars())
    for sid in ordered:
        system = session.get(System, sid)
        if applicable(uow, system, checks) is not None:
            force_check(uow, system, now)
            activity.record(uow, None, now, asker[0], asker[1], "health_check_asked", "system", None,
                            system.fqdn)
            break
    return healthy


def waiting_for_health(uow, recipe: Recipe) -> str | None:
    """Why a recipe with healthy_within waits while systems it could use are free (its `why`)."""
    within = (recipe.spec or {}).get("healthy_within")
    if not within or recipe.class_id is None:
        return None
    checked = list(uow.session.execute(select(System.fqdn).join(SystemHealth, SystemHealth.system_id == System.id).join(
        ClassCandidate, ClassCandidate.system_id == System.id).where(
        ClassCandidate.class_id == recipe.class_id,
        or_(SystemHealth.state == "checking", SystemHealth.next_check_at.is_not(None))).order_by(System.fqdn)
        .limit(5)).scalars())
    wanted = f"a health check passed within {format_human(timedelta(seconds=within))}"
    if checked:
        return f"waiting for {wanted}: checking {', '.join(checked)} first"
    return f"no free system it could use has {wanted}, and no check applies to them (docs/health.md)"


def _checking_for(uow, class_id: int) -> bool:
    return uow.session.execute(select(SystemHealth.id).join(
        ClassCandidate, ClassCandidate.system_id == SystemHealth.system_id).where(
        ClassCandidate.class_id == class_id,
        or_(SystemHealth.state == "checking", SystemHealth.next_check_at.is_not(None))).limit(1)).first() is not None


def require_recent(uow, system: System, within: timedelta, now: datetime) -> None:
    """A reservation of a named system with healthy_within: refused (409) without a recent pass.

    The user is not made to wait here: the answer says how to get a check (the waiting line is for
    reservations by filter or pool).
    """
    row = standing(uow, system, now)
    if rules.recent(row.state, row.passed_at, within, now):
        return
    last = f"last passed at {format_time(row.passed_at)}" if row.passed_at else "never passed a check"
    if row.state == "checking" or row.next_check_at is not None:
        hint = "a check is queued or running: try again once it passes"
    elif system.condition == "automated" and applicable(uow, system) is not None:
        hint = f"ask for one with: lablease system check {system.fqdn}"
    else:
        hint = "no health check can run on it (checks run on Automated systems that a check applies to)"
    raise Conflict(f"{system.fqdn} has no passing health check within the last "
                   f"{format_human(within)}: its health is {row.state} "
                   f"since {format_time(row.since)}, {last}; {hint}")


def summary(row: SystemHealth | None, created_at: datetime | None = None) -> dict:
    if row is None:
        return {"state": "unknown", "since": format_time(created_at), "result": None, "last_check": None,
                "passed_at": None, "check": None, "recipe": None, "next_check": None}
    return {"state": row.state, "since": format_time(row.since), "result": row.result,
            "last_check": format_time(row.last_check_at), "passed_at": format_time(row.passed_at),
            "check": row.check.name if row.check else None, "recipe": row.recipe_id,
            "next_check": format_time(row.next_check_at)}


def summaries(uow, systems: list[System]) -> dict[int, dict]:
    ids = [s.id for s in systems]
    rows = {row.system_id: row for row in uow.session.execute(
        select(SystemHealth).where(SystemHealth.system_id.in_(ids))).unique().scalars()} if ids else {}
    return {s.id: summary(rows.get(s.id), s.created_at) for s in systems}


def where_health(query, state: str):
    """GET /systems?health=: a system never checked has no row and is unknown."""
    if state not in rules.HEALTHS:
        raise Invalid("health", f"must be one of {', '.join(rules.HEALTHS)}")
    known = select(SystemHealth.system_id).where(SystemHealth.state == state)
    if state == "unknown":
        return query.where(or_(System.id.in_(known), ~System.id.in_(select(SystemHealth.system_id))))
    return query.where(System.id.in_(known))
