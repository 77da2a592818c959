"""Health check definitions: a job template a site runs on its systems, per system, pool or arch (admins)."""
from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import select

from ...domain import health as rules
from ...domain.errors import Conflict, Forbidden, Invalid, NotFound
from ...domain.paging import Page, PageRequest
from ...domain.permissions import Actor
from ...domain.times import format_time
from ...store import paging
from ...store.health_tables import HealthCheck
from ...store.paging import Order
from ...store.tables import Pool, System
from ..records import activity
from . import arches
from .health_state import refresh_all


def _admin(actor: Actor) -> None:
    if not actor.is_admin:
        raise Forbidden("only an administrator may define health checks")


def parsed_job(job) -> dict:
    """A job template as jobs are submitted (XML text or the JSON form), with exactly one recipe that the
    check places itself (no force or host requirements: it runs on the system it checks)."""
    from ...jobxml import normalise_job, parse_job_xml

    try:
        normal = parse_job_xml(job.encode()) if isinstance(job, str) else normalise_job(job)
    except Invalid as error:  # named inside the check's body
        raise Invalid("job" if error.field == "job" else f"job.{error.field}", error.extra["reason"]) from None
    except ValueError as error:  # the parsers' own errors name the place
        raise Invalid("job", str(error)) from None
    sets = normal["recipe_sets"]
    if len(sets) != 1 or len(sets[0]["recipes"]) != 1:
        raise Invalid("job", "a health check's job has exactly one recipe set of one recipe")
    recipe = sets[0]["recipes"][0]
    if recipe.get("force") or recipe.get("host_requires") or recipe.get("guests"):
        raise Invalid("job", "a health check's recipe runs on the system it checks: leave out force, "
                             "host requirements and guests")
    return normal


def _target(uow, scope: str, target: str) -> str:
    if scope == "arch":
        return arches.check(uow, target)
    model, column = (System, System.fqdn) if scope == "system" else (Pool, Pool.name)
    if uow.session.execute(select(model.id).where(column == target.lower() if scope == "system" else column == target)
                       ).first() is None:
        raise Invalid(scope, f"no {scope} named {target}")
    return target.lower() if scope == "system" else target


def _values(uow, data: dict, check: HealthCheck | None) -> dict:
    values = {}
    if any(key in data for key in rules.SCOPES):
        scope, target = rules.check_scope(data)
        values["scope"], values["target"] = scope, _target(uow, scope, target)
    elif check is None:
        rules.check_scope(data)
    if "job" in data:
        values["job"], values["source"] = parsed_job(data["job"]), data["job"]
    elif check is None:
        raise Invalid("job", "is required: the job (XML or JSON) to run as the check")
    every = data["every"] if "every" in data else (check.every_seconds if check else None)
    every = every if every is None or isinstance(every, timedelta) else timedelta(seconds=every)
    after = data["after_recipes"] if "after_recipes" in data else (check.after_recipes if check else None)
    cadence = rules.check_cadence(every, after)
    values["every_seconds"] = int(cadence.every.total_seconds()) if cadence.every else None
    values["after_recipes"] = cadence.after_recipes
    return values


def check_dict(check: HealthCheck) -> dict:
    return {"name": check.name, "system": check.target if check.scope == "system" else None,
            "pool": check.target if check.scope == "pool" else None,
            "arch": check.target if check.scope == "arch" else None,
            "every": check.every_seconds,  # seconds, as a reservation's heartbeat
            "after_recipes": check.after_recipes, "job": check.job, "source": check.source,
            "owner": check.owner.name if check.owner else None, "created_at": format_time(check.created_at)}


def find(uow, name: str) -> HealthCheck:
    check = uow.session.execute(select(HealthCheck).where(HealthCheck.name == name)).scalar_one_or_none()
    if check is None:
        raise NotFound(f"no health check named {name}")
    return check


def _clash(uow, values: dict, check: HealthCheck | None) -> None:
    if "scope" not in values:
        return
    other = uow.session.execute(select(HealthCheck).where(HealthCheck.scope == values["scope"],
                                                      HealthCheck.target == values["target"])).scalar_one_or_none()
    if other is not None and other is not check:
        raise Conflict(f"health check {other.name} already applies to {values['scope']} {values['target']}")


def create(uow, actor: Actor, now: datetime, data: dict) -> dict:
    _admin(actor)
    session = uow.session
    name = data.get("name") or ""
    if session.execute(select(HealthCheck.id).where(HealthCheck.name == name)).first():
        raise Conflict(f"a health check named {name} already exists")
    values = _values(uow, data, None)
    _clash(uow, values, None)
    check = HealthCheck(name=name, owner_id=actor.id or None, created_at=now, **values)
    session.add(check)
    session.flush()
    activity.record(uow, actor, now, "health_check", name, "created")
    refresh_all(uow, now)
    return check_dict(check)


def update(uow, actor: Actor, now: datetime, name: str, data: dict) -> dict:
    _admin(actor)
    check = find(uow, name)
    values = _values(uow, data, check)
    _clash(uow, values, check)
    for key, value in values.items():
        if getattr(check, key) != value:
            activity.record(uow, actor, now, "health_check", name, "changed", key, None, None)
            setattr(check, key, value)
    uow.session.flush()
    refresh_all(uow, now)
    return check_dict(check)


def delete(uow, actor: Actor, now: datetime, name: str) -> None:
    _admin(actor)
    session = uow.session
    check = find(uow, name)
    session.delete(check)
    session.flush()
    activity.record(uow, actor, now, "health_check", name, "deleted")
    refresh_all(uow, now)


def listing(uow, actor: Actor, page: PageRequest = PageRequest()) -> Page:
    found = paging.fetch(uow, "health_checks", select(HealthCheck), [Order(HealthCheck.name)], page)
    return Page([check_dict(check) for check in found.items], found.next_after)


def show(uow, actor: Actor, name: str) -> dict:
    return check_dict(find(uow, name))
