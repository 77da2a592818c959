"""Why recipes wait: the scheduler's explanation, its reason in words, and the queue in order."""
from __future__ import annotations

import json
from datetime import datetime

from sqlalchemy import and_, func, or_, select
from sqlalchemy.orm import selectinload

from ..domain import advance as advance_rules
from ..domain import recipes as rules
from ..domain import waiting as waiting_rules
from ..domain.permissions import LENT_TO_ANOTHER, Actor, decide_schedule
from ..domain.times import format_time
from ..domain.windows import Window
from ..scheduler.planner import explain
from ..store import calendar
from ..store.tables import AdvanceReservation, Recipe, RecipeSet, System
from . import placement, scheduling
from . import systems as system_service
from .users import actor_for


def _snapshot(session) -> tuple[list[System], dict, list]:
    """The systems, their active loans and their hosts as the filters see them, as why_waiting judges
    them (read and built once per request, whatever the number of recipes explained)."""
    systems = list(session.execute(select(System).where(System.condition != "removed").options(
        selectinload(System.pools))).unique().scalars())  # hosts name their pools: one query, not one each
    return systems, system_service.active_loans(session, [s.id for s in systems]), [scheduling.host(s) for s in systems]


def why_waiting(session, recipe: Recipe, now: datetime, snapshot: tuple | None = None,
                ahead: int | None = None) -> dict:
    """The scheduler's explanation and its reason in words (domain/waiting.py); `ahead` (the recipe
    sets before it in the queue) is counted when not given."""
    owner = actor_for(session, recipe.recipe_set.job.owner)
    systems, loans, hosts = snapshot or _snapshot(session)
    by_id = {s.id: s for s in systems}

    def usable(h):
        decision = decide_schedule(owner, system_service.access_of(by_id[h.id], loans.get(h.id)))
        if decision.reason == LENT_TO_ANOTHER:  # name the loan only when it alone is in the way (it passes)
            lasting = decide_schedule(owner, system_service.access_of(by_id[h.id], None))
            decision = decision if lasting.allowed else lasting
        return decision.allowed, None if decision.allowed else decision.reason

    runtime = placement.runtime_of(recipe)
    window = Window(now, now + runtime if runtime else None)

    def busy_until(system_id: int):
        blocking = calendar.touching(session, by_id[system_id].resource_id, window)
        if not blocking:
            return False
        return max((b.end_at for b in blocking), default=None) if all(b.end_at for b in blocking) else None

    result = explain(recipe.spec.get("host_requires"), hosts, usable, busy_until,
                     recipe.spec.get("force"))
    ar = session.get(AdvanceReservation, recipe.recipe_set.ar_id) if recipe.recipe_set.ar_id else None
    waits_for_ar = ar and advance_rules.bound_wait(ar.id, ar.state, ar.start_at, ar.error_handling)
    holding = recipe.system.fqdn if recipe.status == "assigned" else None
    if holding:
        message = f"holding {holding} until the rest of its recipe set can start"
    else:
        message = waits_for_ar or result.message() or "waiting for its recipe set's other recipes"
    if ahead is None:
        ahead = sets_ahead(session, recipe.recipe_set)
    said = waiting_rules.reason(waiting_rules.Facts(result.candidates, result.ruled_out, result.busy, ahead,
                                                    holding, waits_for_ar or None))
    return {"message": message, **said.as_dict(), "ahead": ahead, "systems": result.total,
            "candidates": result.candidates, "ruled_out": result.ruled_out,
            "busy": [{"system": fqdn, "until": format_time(until)} for fqdn, until in result.busy],
            "free": result.free[:FREE_SHOWN]}


FREE_SHOWN = 20  # free candidates named in an explanation (the count is in `candidates`)


def sets_ahead(session, recipe_set: RecipeSet) -> int:
    """Waiting recipe sets the scheduler offers systems to before this one (scheduling.queue_order)."""
    before = or_(RecipeSet.priority > recipe_set.priority,
                 and_(RecipeSet.priority == recipe_set.priority,
                      or_(RecipeSet.queued_at < recipe_set.queued_at,
                          and_(RecipeSet.queued_at == recipe_set.queued_at, RecipeSet.id < recipe_set.id))))
    return session.execute(select(func.count()).select_from(RecipeSet).where(
        RecipeSet.status.in_(placement.WAITING), before)).scalar_one()


def queue(uow, actor: Actor, now: datetime, limit: int = 100, details: bool = False) -> list[dict]:
    """Waiting recipes in scheduling order, each with why it waits (details: the whole explanation too,
    as GET /recipes/{id} gives it: the web's queue page shows it per candidate on expanding)."""
    session = uow.session
    sets = session.execute(scheduling.queue_order(select(RecipeSet).where(
        RecipeSet.status.in_(placement.WAITING))).limit(limit)).unique().scalars()
    snapshot = _snapshot(session)
    out = []
    for position, recipe_set in enumerate(sets, start=1):
        for recipe in recipe_set.recipes:
            if recipe.status in placement.WAITING:
                why = why_waiting(session, recipe, now, snapshot, ahead=position - 1)
                out.append({"recipe": recipe.id, "job": recipe.job_id, "owner": recipe_set.job.owner.name,
                            "priority": rules.PRIORITIES[recipe_set.priority], "status": recipe.status,
                            "queued_at": format_time(recipe_set.queued_at), "position": position,
                            "waiting": round((now - recipe_set.queued_at).total_seconds()),
                            "wants": _wants(recipe.spec), "why": why["message"],
                            "reason": {k: why[k] for k in ("category", "sentence", "action")}}
                           | ({"explanation": why} if details else {}))
    return out


def _wants(spec: dict) -> str:
    """What a recipe asks for, in one line: its distro and host requirements as submitted."""
    distro = (spec.get("distro_requires") or {})
    parts = [spec.get("force") and f"system {spec['force']}", json.dumps(spec.get("host_requires"))
             if spec.get("host_requires") else "any system"]
    if distro:
        parts.append("distro " + json.dumps(distro))
    return ", ".join(p for p in parts if p)
