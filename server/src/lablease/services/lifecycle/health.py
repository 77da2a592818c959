"""System health checks at work: running a due check as a job, and what its end does
(services/catalog/health_state.py holds the health itself, the cadence and the hand-over gate).

- The worker submits a due check (DUE, a services/records/due.py step) as an Urgent job forced onto the system,
  owned by the administrator who defined the check; the scheduler runs it like any recipe.
- A recipe's end (the RecipeFinished event, services/handlers.py) reaches on_recipe_finished: a check's end sets the health (a failure makes an Automated system
  Broken, with the check's outcome as the reason, and tells its owner); any other recipe counts towards
  `after_recipes`.
- Back from Broken (condition_changed) and after a failed install (install_failed) a check is forced.
- healthy_within: the scheduler hands a recipe only systems with a recent pass (gate), asking for a check
  on one candidate when none has one; a reservation of a named system without one is refused
  (require_recent, 409). docs/health.md has the rules.
"""
from __future__ import annotations

import copy
from datetime import datetime

from sqlalchemy import select

from ...domain import health as rules
from ...domain.errors import Conflict, Forbidden
from ...domain.events import RecipeFinished, RecipeSetQueued, SystemChanged
from ...domain.permissions import Actor, decide_schedule
from ...domain.times import format_time
from ...store.health_tables import HealthCheck, SystemHealth
from ...store.provision_tables import Installation
from ...store.tables import Activity, ClassCandidate, Recipe, RecipeSet, System
from ...store.waitline_tables import ReservationWait
from ..catalog import systems as system_service
from ..catalog.health_state import applicable, force_check, refresh, set_state, standing, summary
from ..messages import notices
from ..people.users import actor_for
from ..queue import waitline
from ..queue.waitline import WAITING
from ..records import activity, due, usage
from .jobs import submit


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
    row = standing(uow, system, now)
    check = applicable(uow, system)
    if check is None or check.owner is None or system.condition != "automated" or row.state == "checking":
        row.next_check_at = None
        return None
    set_state(row, "checking", now)
    row.forced, row.next_check_at, row.check_id = False, None, check.id
    uow.session.flush()
    job, _ = submit(uow, actor_for(uow, check.owner), now, check_job(check, system.fqdn))
    row.recipe_id = job["recipe_sets"][0]["recipes"][0]["id"]
    activity.record(uow, None, now, "system", system.fqdn, "health_check", "health", None,
                    f"{check.name}: job {job['id']}")
    return row.recipe_id


def _due_check(uow, row: SystemHealth, now: datetime) -> None:
    start_check(uow, uow.session.get(System, row.system_id), now)


DUE = due.Step("health_check", "submitted health check", SystemHealth, SystemHealth.next_check_at,
               SystemHealth.next_check_at.is_not(None), _due_check)


def request(uow, actor: Actor, now: datetime, fqdn: str) -> dict:
    """POST /systems/{fqdn}/health-check: check the system as soon as it is free (anyone its recipes may run for)."""
    system = system_service.find(uow, fqdn, actor)
    if system.condition != "automated":
        raise Conflict(f"{system.fqdn} is {system.condition}: health checks run on Automated systems only")
    decision = decide_schedule(actor, system_service.access_of(system, system_service.active_loan(uow, system)))
    if not decision:  # whoever the scheduler could give it to may ask that it be checked
        raise Forbidden(f"{system.fqdn}: {decision.reason}")
    if applicable(uow, system) is None:
        raise Conflict(f"no health check applies to {system.fqdn} (define one with POST /health-checks)")
    row = standing(uow, system, now)
    if row.state != "checking":
        force_check(uow, system, now)
        activity.record(uow, actor, now, "system", system.fqdn, "health_check_requested")
    return summary(row)


# --- a check ends --------------------------------------------------------------------------

def on_recipe_finished(uow, event: RecipeFinished) -> None:
    """A recipe ended (jobs.finish): a check's outcome sets the health; other recipes count towards the next."""
    session, now, status = uow.session, event.now, event.status
    recipe = session.get(Recipe, event.recipe_id)
    row = session.execute(select(SystemHealth).where(SystemHealth.recipe_id == recipe.id)).scalar_one_or_none()
    if row is not None:
        _check_ended(uow, row, recipe, status, now)
    elif recipe.system_id is not None and recipe.started_at is not None and recipe.host_recipe_id is None:
        system = session.get(System, recipe.system_id)
        standing(uow, system, now).recipes_since += 1
        refresh(uow, system, now)


def _check_ended(uow, row: SystemHealth, recipe: Recipe, status: str, now: datetime) -> None:
    system = uow.session.get(System, row.system_id)
    name = row.check.name if row.check else "(deleted)"
    verdict = rules.passed(status, recipe.result)
    row.recipe_id, row.recipes_since = None, 0
    if verdict is None:  # cancelled: it says nothing of the system
        set_state(row, "unknown", now)
        row.result = f"health check {name} cancelled"
    else:
        row.last_check_at = now
        why = _abort_reason(uow, recipe) if status == "aborted" else None
        row.result = (f"health check {name} passed" if verdict else
                      rules.failure_reason(name, status, recipe.result, recipe.task_results or [], why))
        set_state(row, "good" if verdict else "bad", now)
        if verdict:
            row.passed_at = now
    activity.record(uow, None, now, "system", system.fqdn, "health", "health", None, row.result)
    if verdict is False:
        _broken(uow, system, row.result, now)
    refresh(uow, system, now)
    _retry_waiting(uow, system, now)


def _abort_reason(uow, recipe: Recipe) -> str | None:
    """Why the recipe was aborted: its failed installation's error, else the activity log's reason."""
    session = uow.session
    failed = session.execute(select(Installation.error).where(
        Installation.recipe_id == recipe.id, Installation.status == "failed")
        .order_by(Installation.id.desc()).limit(1)).scalar_one_or_none()
    return failed or session.execute(select(Activity.new).where(
        Activity.object_type == "recipe", Activity.object_id == str(recipe.id), Activity.field == "reason")
        .order_by(Activity.id.desc()).limit(1)).scalar_one_or_none()


def _broken(uow, system: System, reason: str, now: datetime) -> None:
    """A failed check: an Automated system leaves the scheduler's hands; its owner is told."""
    if system.condition == "automated":
        old, system.condition = system.condition, "broken"
        usage.record_condition(uow, system, old, now)
        activity.record(uow, None, now, "system", system.fqdn, "broken", "condition", old, "broken")
        uow.emit(SystemChanged(system.id, now))
    if system.owner is not None:
        notices.queue(uow, notices.Notice(
            system.owner, "system.health_failed", f"{system.id}:{format_time(now)}",
            f"[lablease] {system.fqdn}: health check failed, now {system.condition}",
            f"The health check of {system.fqdn}, which you own, failed: {reason}. "
            f"The system is {system.condition}.",
            {"system": system.fqdn, "condition": system.condition, "reason": reason}), now)


def _retry_waiting(uow, system: System, now: datetime) -> None:
    """Recipes and waiting reservations that wait for a healthy system among this one's peers are tried
    again: after a pass they may take it, after a failure the next candidate is checked (gate)."""
    session = uow.session
    sets = session.execute(select(Recipe.recipe_set_id).join(
        ClassCandidate, ClassCandidate.class_id == Recipe.class_id).where(
        ClassCandidate.system_id == system.id, Recipe.status == "queued").distinct()).scalars()
    gated = [set_id for set_id in list(sets)
             if any((r.spec or {}).get("healthy_within") for r in session.get(RecipeSet, set_id).recipes)]
    if gated:
        uow.emit(RecipeSetQueued(tuple(gated), now))
    waits = (select(ReservationWait.reservation_id).join(
        ClassCandidate, ClassCandidate.class_id == ReservationWait.class_id).where(
        ClassCandidate.system_id == system.id, ReservationWait.status == WAITING,
        ReservationWait.healthy_within_seconds.is_not(None))
        .order_by(ReservationWait.priority.desc(), ReservationWait.queued_at, ReservationWait.reservation_id))
    for reservation_id in list(session.execute(waits).scalars()):
        waitline.offer(uow, reservation_id, None, now)  # a healthy peer, or the next candidate is checked
