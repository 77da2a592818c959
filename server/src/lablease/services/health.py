"""System health: when checks are due, running them as jobs, what their end does, and the hand-over gate.

- The worker submits a due check (DUE, a services/due.py step) as an Urgent job forced onto the system,
  owned by the administrator who defined the check; the scheduler runs it like any recipe.
- jobs.finish tells after_recipe: a check's end sets the health (a failure makes an Automated system
  Broken, with the check's outcome as the reason, and tells its owner); any other recipe counts towards
  `after_recipes`.
- Back from Broken (condition_changed) and after a failed install (install_failed) a check is forced.
- healthy_within: the scheduler hands a recipe only systems with a recent pass (gate), asking for a check
  on one candidate when none has one; a reservation of a named system without one is refused
  (require_recent, 409). docs/health.md has the rules.
"""
from __future__ import annotations

import copy
from datetime import datetime, timedelta

from sqlalchemy import or_, select

from ..domain import health as rules
from ..domain.errors import Conflict, Forbidden, Invalid
from ..domain.permissions import Actor, decide_schedule
from ..domain.times import format_human, format_time
from ..store.tables import ClassCandidate, HealthCheck, Recipe, RecipeSet, System, SystemHealth
from ..store.uow import emit, wake_worker
from ..domain.events import RecipeSetQueued, SystemChanged
from . import activity, due, notices, usage
from .users import actor_for


def standing(session, system: System, now: datetime) -> SystemHealth:
    """The system's health row, created (unknown since the system was added) the first time it is needed."""
    row = session.execute(select(SystemHealth).where(SystemHealth.system_id == system.id)).scalar_one_or_none()
    if row is None:
        row = SystemHealth(system_id=system.id, state="unknown", since=system.created_at or now, recipes_since=0,
                           forced=False)
        session.add(row)
        session.flush()
    return row


def applicable(session, system: System, checks: list[HealthCheck] | None = None) -> HealthCheck | None:
    if checks is None:
        checks = list(session.execute(select(HealthCheck)).unique().scalars())
    return rules.applicable([(c.scope, c.target, c) for c in checks], system.fqdn,
                            [p.name for p in system.pools], system.arch)


def refresh(session, system: System, now: datetime, checks: list[HealthCheck] | None = None) -> SystemHealth:
    """Recompute when the system's next check is due (domain/health.py next_check_at)."""
    row = standing(session, system, now)
    check = applicable(session, system, checks)
    cadence = None if check is None else rules.Cadence(
        timedelta(seconds=check.every_seconds) if check.every_seconds else None, check.after_recipes)
    row.next_check_at = rules.next_check_at(rules.Standing(
        system.condition, row.state == "checking", row.forced, row.last_check_at, row.recipes_since), cadence, now)
    if row.next_check_at is not None:
        wake_worker(session)
    return row


def refresh_all(session, now: datetime) -> None:
    """The checks changed: every system that is given out may have a new cadence."""
    checks = list(session.execute(select(HealthCheck)).unique().scalars())
    for system in session.execute(select(System).where(System.condition != "removed", System.guest.is_(False))
                                  ).unique().scalars():
        refresh(session, system, now, checks)


def _force(session, system: System, now: datetime) -> SystemHealth:
    row = standing(session, system, now)
    row.forced = True
    return refresh(session, system, now)


def condition_changed(session, system: System, old: str, now: datetime) -> None:
    """Hook (services/systems.py): a system back from Broken is checked before anyone gets it."""
    if old == "broken" and system.condition == "automated":
        _force(session, system, now)


def install_failed(session, system: System, now: datetime) -> None:
    """Hook (services/installations.py): after a failed install the system is checked again."""
    if not system.guest:
        _force(session, system, now)


def _set(row: SystemHealth, state: str, now: datetime) -> None:
    if row.state != state:
        row.state, row.since = state, now


# --- running a check ------------------------------------------------------------------------

def check_job(check: HealthCheck, fqdn: str) -> dict:
    """The check's job, placed on the system it checks, ahead of ordinary work."""
    job = copy.deepcopy(check.job)
    job["whiteboard"] = job.get("whiteboard") or f"health check {check.name} of {fqdn}"
    job["recipe_sets"][0]["priority"] = "Urgent"
    recipe = job["recipe_sets"][0]["recipes"][0]
    recipe["force"], recipe["host_requires"] = fqdn, None
    recipe["autopick"] = {"random": False, "pools": []}
    return job


def start_check(uow, system: System, now: datetime) -> int | None:
    """Submit the system's check; returns its recipe id (None when no check applies)."""
    from .jobs import submit  # jobs.finish tells this module about recipes ending

    session = uow.session
    row = standing(session, system, now)
    check = applicable(session, system)
    if check is None or check.owner is None or system.condition != "automated" or row.state == "checking":
        row.next_check_at = None
        return None
    _set(row, "checking", now)
    row.forced, row.next_check_at, row.check_id = False, None, check.id
    session.flush()
    job, _ = submit(uow, actor_for(session, check.owner), now, check_job(check, system.fqdn))
    row.recipe_id = job["recipe_sets"][0]["recipes"][0]["id"]
    activity.record(session, None, now, "system", system.fqdn, "health_check", "health", None,
                    f"{check.name}: job {job['id']}")
    return row.recipe_id


def _due_check(uow, row: SystemHealth, now: datetime) -> None:
    start_check(uow, uow.session.get(System, row.system_id), now)


DUE = due.Step("health_check", "submitted health check", SystemHealth, SystemHealth.next_check_at,
               SystemHealth.next_check_at.is_not(None), _due_check)


def request(uow, actor: Actor, now: datetime, fqdn: str) -> dict:
    """POST /systems/{fqdn}/health-check: check the system as soon as it is free (anyone its recipes may run for)."""
    from . import systems as system_service

    session = uow.session
    system = system_service.find(session, fqdn, actor)
    if system.condition != "automated":
        raise Conflict(f"{system.fqdn} is {system.condition}: health checks run on Automated systems only")
    decision = decide_schedule(actor, system_service.access_of(system, system_service.active_loan(session, system)))
    if not decision:  # whoever the scheduler could give it to may ask that it be checked
        raise Forbidden(f"{system.fqdn}: {decision.reason}")
    if applicable(session, system) is None:
        raise Conflict(f"no health check applies to {system.fqdn} (define one with POST /health-checks)")
    row = standing(session, system, now)
    if row.state != "checking":
        _force(session, system, now)
        activity.record(session, actor, now, "system", system.fqdn, "health_check_requested")
    return summary(row)


# --- a check ends --------------------------------------------------------------------------

def after_recipe(session, recipe: Recipe, status: str, now: datetime, settings) -> None:
    """Hook (jobs.finish): a check's outcome sets the health; other recipes count towards the next check."""
    row = session.execute(select(SystemHealth).where(SystemHealth.recipe_id == recipe.id)).scalar_one_or_none()
    if row is not None:
        _check_ended(session, row, recipe, status, now, settings)
    elif recipe.system_id is not None and recipe.started_at is not None and recipe.host_recipe_id is None:
        system = session.get(System, recipe.system_id)
        standing(session, system, now).recipes_since += 1
        refresh(session, system, now)


def _check_ended(session, row: SystemHealth, recipe: Recipe, status: str, now: datetime, settings) -> None:
    system = session.get(System, row.system_id)
    name = row.check.name if row.check else "(deleted)"
    verdict = rules.passed(status, recipe.result)
    row.recipe_id, row.recipes_since = None, 0
    if verdict is None:  # cancelled: it says nothing of the system
        _set(row, "unknown", now)
        row.result = f"health check {name} cancelled"
    else:
        row.last_check_at = now
        why = _abort_reason(session, recipe) if status == "aborted" else None
        row.result = (f"health check {name} passed" if verdict else
                      rules.failure_reason(name, status, recipe.result, recipe.task_results or [], why))
        _set(row, "good" if verdict else "bad", now)
        if verdict:
            row.passed_at = now
    activity.record(session, None, now, "system", system.fqdn, "health", "health", None, row.result)
    if verdict is False:
        _broken(session, system, row.result, now, settings)
    refresh(session, system, now)
    _retry_waiting(session, system, now)


def _abort_reason(session, recipe: Recipe) -> str | None:
    """Why the recipe was aborted: its failed installation's error, else the activity log's reason."""
    from ..store.tables import Activity, Installation

    failed = session.execute(select(Installation.error).where(
        Installation.recipe_id == recipe.id, Installation.status == "failed")
        .order_by(Installation.id.desc()).limit(1)).scalar_one_or_none()
    return failed or session.execute(select(Activity.new).where(
        Activity.object_type == "recipe", Activity.object_id == str(recipe.id), Activity.field == "reason")
        .order_by(Activity.id.desc()).limit(1)).scalar_one_or_none()


def _broken(session, system: System, reason: str, now: datetime, settings) -> None:
    """A failed check: an Automated system leaves the scheduler's hands; its owner is told."""
    if system.condition == "automated":
        old, system.condition = system.condition, "broken"
        usage.record_condition(session, system, old, now)
        activity.record(session, None, now, "system", system.fqdn, "broken", "condition", old, "broken")
        emit(session, SystemChanged(system.id, now))
    if system.owner is not None:
        notices.queue(session, settings, system.owner, now, "system.health_failed", f"{system.id}:{format_time(now)}",
                      f"[lablease] {system.fqdn}: health check failed, now {system.condition}",
                      f"The health check of {system.fqdn}, which you own, failed: {reason}. "
                      f"The system is {system.condition}.",
                      {"system": system.fqdn, "condition": system.condition, "reason": reason})


def _retry_waiting(session, system: System, now: datetime) -> None:
    """Recipes that wait for a healthy system among this one's peers are placed again: after a pass they
    may take it, after a failure the next candidate is checked (gate)."""
    sets = session.execute(select(Recipe.recipe_set_id).join(
        ClassCandidate, ClassCandidate.class_id == Recipe.class_id).where(
        ClassCandidate.system_id == system.id, Recipe.status == "queued").distinct()).scalars()
    for set_id in list(sets):
        recipe_set = session.get(RecipeSet, set_id)
        if any((r.spec or {}).get("healthy_within") for r in recipe_set.recipes):
            emit(session, RecipeSetQueued(set_id, now))


# --- the hand-over gate ----------------------------------------------------------------------

def gate(session, recipe: Recipe, ordered: list[int], now: datetime) -> list[int]:
    """Scheduler hook: of the free candidates, those with a pass within the recipe's healthy_within.

    When none has one, a check is asked for on the first free candidate a check applies to, unless one
    of the recipe's candidates is being checked already: one check at a time per recipe, never a storm.
    """
    within = (recipe.spec or {}).get("healthy_within")
    if not within or not ordered:
        return ordered
    rows = {row.system_id: row for row in session.execute(
        select(SystemHealth).where(SystemHealth.system_id.in_(ordered))).scalars()}
    window = timedelta(seconds=within)
    healthy = [sid for sid in ordered if sid in rows and rules.recent(rows[sid].state, rows[sid].passed_at,
                                                                      window, now)]
    if healthy or recipe.class_id is None or _checking_for(session, recipe):
        return healthy
    checks = list(session.execute(select(HealthCheck)).unique().scalars())
    for sid in ordered:
        system = session.get(System, sid)
        if applicable(session, system, checks) is not None:
            _force(session, system, now)
            activity.record(session, None, now, "recipe", recipe.id, "health_check_asked", "system", None,
                            system.fqdn)
            break
    return healthy


def waiting_for_health(session, recipe: Recipe) -> str | None:
    """Why a recipe with healthy_within waits while systems it could use are free (its `why`)."""
    within = (recipe.spec or {}).get("healthy_within")
    if not within or recipe.class_id is None:
        return None
    checked = list(session.execute(select(System.fqdn).join(SystemHealth, SystemHealth.system_id == System.id).join(
        ClassCandidate, ClassCandidate.system_id == System.id).where(
        ClassCandidate.class_id == recipe.class_id,
        or_(SystemHealth.state == "checking", SystemHealth.next_check_at.is_not(None))).order_by(System.fqdn)
        .limit(5)).scalars())
    wanted = f"a health check passed within {format_human(timedelta(seconds=within))}"
    if checked:
        return f"waiting for {wanted}: checking {', '.join(checked)} first"
    return f"no free system it could use has {wanted}, and no check applies to them (docs/health.md)"


def _checking_for(session, recipe: Recipe) -> bool:
    return session.execute(select(SystemHealth.id).join(
        ClassCandidate, ClassCandidate.system_id == SystemHealth.system_id).where(
        ClassCandidate.class_id == recipe.class_id,
        or_(SystemHealth.state == "checking", SystemHealth.next_check_at.is_not(None))).limit(1)).first() is not None


def require_recent(session, system: System, within: timedelta, now: datetime) -> None:
    """A reservation of a named system with healthy_within: refused (409) without a recent pass.

    The user is not made to wait here: the answer says how to get a check (the waiting line is for
    reservations by filter or pool).
    """
    row = standing(session, system, now)
    if rules.recent(row.state, row.passed_at, within, now):
        return
    last = f"last passed at {format_time(row.passed_at)}" if row.passed_at else "never passed a check"
    if row.state == "checking" or row.next_check_at is not None:
        hint = "a check is queued or running: try again once it passes"
    elif system.condition == "automated" and applicable(session, system) is not None:
        hint = f"ask for one with: lablease system check {system.fqdn}"
    else:
        hint = "no health check can run on it (checks run on Automated systems that a check applies to)"
    raise Conflict(f"{system.fqdn} has no passing health check within the last "
                   f"{format_human(within)}: its health is {row.state} "
                   f"since {format_time(row.since)}, {last}; {hint}")


# --- what GET /systems shows -------------------------------------------------------------------

def summary(row: SystemHealth | None, created_at: datetime | None = None) -> dict:
    if row is None:
        return {"state": "unknown", "since": format_time(created_at), "result": None, "last_check": None,
                "passed_at": None, "check": None, "recipe": None, "next_check": None}
    return {"state": row.state, "since": format_time(row.since), "result": row.result,
            "last_check": format_time(row.last_check_at), "passed_at": format_time(row.passed_at),
            "check": row.check.name if row.check else None, "recipe": row.recipe_id,
            "next_check": format_time(row.next_check_at)}


def summaries(session, systems: list[System]) -> dict[int, dict]:
    ids = [s.id for s in systems]
    rows = {row.system_id: row for row in session.execute(
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
