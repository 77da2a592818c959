"""Advance reservations over time: w -> r -> x by the clock, into E and back when held systems
break or are repaired (a change made on purpose that would break one is refused unless forced),
ending (x at the end, d when deleted), and publishing each change (webhooks; mail per -m flags)."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from ...domain import advance as rules
from ...domain.errors import Conflict
from ...domain.events import AdvanceReservationEnded, RecipeSetQueued, SystemChanged, SystemFreed
from ...domain.permissions import Actor
from ...store import calendar
from ...store.advance_tables import AdvanceReservation, ArSystem
from ...store.tables import Booking, RecipeSet
from ..booking.endings import close_reservation
from ..calendar import advance
from ..calendar.advance_notices import publish
from ..calendar.advance_work import place_bound
from ..queue.placement import refresh_rollups
from ..records import activity, due
from .jobs import finish as finish_recipe


def on_ended(uow, event: AdvanceReservationEnded) -> None:
    """An AR was deleted (or ended otherwise than by the clock)."""
    finish(uow, uow.session.get(AdvanceReservation, event.ar_id), event.now, event.state,
           event.actor, event.why)


def finish(uow, ar: AdvanceReservation, now: datetime, state: str, actor: Actor | None,
            why: str) -> None:
    """End the AR (x at its end, d when deleted): bound work is aborted, nested reservations returned,
    the systems' bookings released from now."""
    session = uow.session
    for recipe_set in session.execute(select(RecipeSet).where(RecipeSet.ar_id == ar.id)).unique().scalars():
        for recipe in recipe_set.recipes:
            if recipe.status not in ("completed", "cancelled", "aborted"):
                finish_recipe(uow, recipe, "aborted", now, actor)
                activity.record(uow, actor, now, "recipe", recipe.id, "aborted", "reason", None,
                                f"advance reservation {ar.id} {why}")
        refresh_rollups(uow, recipe_set, now)
    for reservation in advance.open_reservations(uow, ar):
        close_reservation(uow, reservation, now, "ar_ended", actor)
    for held in ar.systems:
        if held.booking_id is not None and state == "d":
            calendar.release(session, session.get(Booking, held.booking_id), now)
        uow.emit(SystemFreed(held.system_id, now))
    _move(uow, ar, state, now, actor, why)
    ar.due_at = None


def _move(uow, ar: AdvanceReservation, state: str, now: datetime, actor: Actor | None,
          why: str) -> None:
    rules.check_transition(ar.state, state)
    old, ar.state, ar.changed_at = ar.state, state, now
    # why goes with the new state: it is free text, longer than an action name may be
    activity.record(uow, actor, now, "advance_reservation", ar.id, "state_changed", "state", old,
                    f"{state} ({why})")
    kind = {"r": "b", "x": "e", "d": "e", "E": "a"}.get(state, "a")
    publish(uow, ar, now, "state_changed", f"advance reservation {ar.id}: {old} -> {state} ({why})",
             mail_kind=kind, extra={"old": old, "new": state})


# --- living: time, errors -------------------------------------------------------------------------

def _transition(uow, ar: AdvanceReservation, now: datetime) -> None:
    """An AR whose start or end came moves w -> r, r/E -> x. One the worker reaches only after its end (the
    worker was stopped through the whole window) still starts before it exits: its holders hear of both, and
    w -> x, which the states do not allow, is never tried (it failed the step again at every turn)."""
    if ar.state == "w":
        _move(uow, ar, "r", now, None, "its start was reached")
        if now < ar.end_at:
            ar.due_at = rules.next_transition("r", ar.start_at, ar.end_at, now)
            place_bound(uow, ar, now)
            return
    if now >= ar.end_at:
        finish(uow, ar, now, "x", None, "its end was reached")
    else:
        ar.due_at = rules.next_transition(ar.state, ar.start_at, ar.end_at, now)


TRANSITION = due.Step("ar_transition", "advance reservation changed state", AdvanceReservation,
                      AdvanceReservation.due_at, AdvanceReservation.state.in_(rules.ACTIVE), _transition,
                      "advance_reservation")


def holding(uow, system_id: int, states=rules.ACTIVE) -> list[AdvanceReservation]:
    return list(uow.session.execute(select(AdvanceReservation).join(ArSystem, ArSystem.ar_id == AdvanceReservation.id)
                                .where(ArSystem.system_id == system_id, AdvanceReservation.state.in_(states)))
                .unique().scalars())


def problems(uow, ar: AdvanceReservation) -> list[tuple[str, str]]:
    """Why the AR cannot be satisfied now, as (kind, text) (domain/advance.py decides)."""
    members = advance.acl_actors(uow, ar.acl or [])
    held = [advance.facts(uow, h.system, members, h.lab) for h in ar.systems]
    return rules.problems(held, ar.pools or [])


def recheck(uow, ar: AdvanceReservation, now: datetime, actor: Actor | None = None,
            force: bool | None = None) -> None:
    """Into E when a held system is no longer usable; out of it (by time) once all are again.

    A change made on purpose that would break a granted AR (removing or retiring its system, taking
    it out of a pool the AR asked for, locking an ACL user out) is refused unless the request said
    force=true; forced, the AR goes into error and the change is logged.
    """
    found = problems(uow, ar)
    new = rules.breaks_on_purpose(found, ar.error_reasons or [])
    # Only an API request can be refused (it says force=true or not: True or False); the worker's
    # changes just happen (None).
    if new and force is False:
        raise Conflict(f"this would break advance reservation {ar.id} ({'; '.join(new)}); "
                       "repeat with force=true to do it anyway (the reservation goes into error)")
    if new:
        activity.record(uow, actor, now, "advance_reservation", ar.id, "forced", "change", None, "; ".join(new))
    reasons = [text for _, text in found]
    ar.error_reasons = reasons
    if reasons and ar.state in ("w", "r"):
        _move(uow, ar, "E", now, actor, "; ".join(reasons))
    elif not reasons and ar.state == "E":
        _move(uow, ar, rules.state_by_time(ar.start_at, ar.end_at, now), now, actor,
              "its systems are usable again")
        place_bound(uow, ar, now)


def on_system_changed(uow, event: SystemChanged) -> None:
    for ar in holding(uow, event.system_id):
        recheck(uow, ar, event.now, force=event.force)


def on_system_freed(uow, event: SystemFreed) -> None:
    for ar in holding(uow, event.system_id, ("r", "E")):
        place_bound(uow, ar, event.now)


def on_new_sets(uow, event: RecipeSetQueued) -> None:
    """Sets bound to an advance reservation start on its systems: each reservation placed once (place_bound
    takes all its queued sets, in its own order)."""
    sets = (uow.session.get(RecipeSet, set_id) for set_id in event.recipe_set_ids)
    for ar_id in dict.fromkeys(s.ar_id for s in sets if s is not None and s.ar_id is not None):
        ar = uow.session.get(AdvanceReservation, ar_id)
        if ar is not None:
            place_bound(uow, ar, event.now)
