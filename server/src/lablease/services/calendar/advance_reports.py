"""What advance reservations use: accounting (the per-system summaries are store/queries.py's)."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from ...domain import advance as rules
from ...domain.permissions import Actor
from ...store.tables import RecipeSet, Reservation
from ...timeparse import parse_time
from .advance import find


def accounting(uow, actor: Actor, now: datetime, ident) -> dict:
    """Reserved system-time against the time its bound work and reservations used."""
    session = uow.session
    ar = find(uow, actor, ident)
    until = min(now, ar.end_at) if ar.state != "d" else min(ar.changed_at, ar.end_at)
    used = []
    for recipe_set in session.execute(select(RecipeSet).where(RecipeSet.ar_id == ar.id)).unique().scalars():
        for recipe in recipe_set.recipes:
            if recipe.started_at is not None and recipe.system is not None:
                seconds = rules.overlap_seconds([(recipe.started_at, recipe.finished_at or until)], ar.start_at, until)
                used.append(("job", {"job": recipe.job_id, "recipe": recipe.id, "system": recipe.system.fqdn},
                             recipe.system.fqdn, seconds))
    for reservation in session.execute(select(Reservation).where(Reservation.ar_id == ar.id)).unique().scalars():
        end = min(filter(None, (reservation.returned_at, reservation.end_at, until)))
        seconds = rules.overlap_seconds([(reservation.start_at, end)], ar.start_at, until)
        used.append(("reservation", {"reservation": reservation.id, "user": reservation.user.name,
                                     "system": reservation.system.fqdn}, reservation.system.fqdn, seconds))
    # a system given back before the end (docs/advance-reservations.md) is counted until it was
    reserved = {held.system.fqdn: rules.reserved_seconds(ar.start_at, ar.end_at, until, 1) for held in ar.systems}
    for gone in ar.released or []:
        reserved[gone["system"]] = rules.reserved_seconds(ar.start_at, ar.end_at, min(until, parse_time(gone["at"], "released")), 1)
    per_system = dict.fromkeys(reserved, 0.0)
    for _, _, fqdn, seconds in used:
        per_system[fqdn] = per_system.get(fqdn, 0.0) + seconds
    return {"ar": ar.id, "account": ar.account, "state": ar.state,
            "reserved_seconds": sum(reserved.values()),
            "used_seconds": sum(s for *_, s in used),
            "systems": [{"system": fqdn, "reserved_seconds": reserved.get(fqdn, 0.0), "used_seconds": seconds}
                        for fqdn, seconds in per_system.items()],
            "jobs": [{**what, "seconds": s} for kind, what, _, s in used if kind == "job"],
            "reservations": [{**what, "seconds": s} for kind, what, _, s in used if kind == "reservation"]}
