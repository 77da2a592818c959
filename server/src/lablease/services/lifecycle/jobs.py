"""Jobs: submit, show, cancel; recipes: report results, finish, watchdog; why a recipe waits."""
from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import insert, select
from sqlalchemy.orm import selectinload

from ...domain import guests as guest_rules
from ...domain import recipes as rules
from ...domain import reservations as reservation_rules
from ...domain import retries
from ...domain.errors import Forbidden, Invalid, NotFound
from ...domain.events import DistroTreeRemoved, RecipeAborted, RecipeFinished, RecipeSetQueued, RecipeSystemTaken
from ...domain.notices import warn_at
from ...domain.paging import Page, PageRequest
from ...domain.permissions import Actor
from ...domain.reservations import due_at
from ...domain.times import format_time
from ...domain.variables import masked_ks_meta
from ...jobxml import referenced_names
from ...store import calendar, queries
from ...store import paging
from ...store.paging import Order
from ...store.tables import Booking, Group, GroupMember, Job, Pool, Recipe, RecipeSet, Reservation, System
from ...timeparse import format_duration
from ..booking.endings import close_reservation
from ..calendar import advance_work
from ..catalog import arches, distros
from ..messages import notices
from ..provisioning import guests
from ..queue import placement
from ..queue import scheduling, waiting
from ..records import activity, due, usage
from .reservations import loan_end_of


def _check_bound_sets(uow, actor: Actor, job: dict, now: datetime) -> None:
    settings = uow.settings
    offset = settings.ar_duration_offset
    for index, recipe_set in enumerate(job["recipe_sets"]):
        if recipe_set.get("ar") is not None:
            advance_work.check_bound_set(uow, actor, recipe_set["ar"], recipe_set["recipes"], offset, now,
                                    f"recipe_sets[{index}].ar")


def _check_reservesys(job: dict, settings) -> None:
    """A recipe may not ask to keep its system for longer than the site's maximum reservation."""
    for i, recipe_set in enumerate(job["recipe_sets"]):
        for j, recipe in enumerate(recipe_set["recipes"]):
            if recipe.get("reservesys"):
                reservation_rules.check_length(settings.reservation_policy,
                                               timedelta(seconds=recipe["reservesys"]["duration"]),
                                               f"recipe_sets[{i}].recipes[{j}].reservesys.duration")


def _check_own_kickstarts(job: dict, settings) -> None:
    """A site that allows nobody a kickstart of their own refuses such a job at once."""
    if settings.job_kickstarts != "nobody":
        return
    for i, recipe_set in enumerate(job["recipe_sets"]):
        for j, recipe in enumerate(recipe_set["recipes"]):
            if recipe.get("kickstart") is not None:
                raise Invalid(f"recipe_sets[{i}].recipes[{j}].kickstart",
                              "this site allows no job its own kickstart (setting job_kickstarts)")


def _check_references(uow, job: dict) -> None:
    """Unknown pools, attribute keys, systems and distros are errors, never a silent match-all."""
    session = uow.session
    named = referenced_names(job)
    known_pools = set(session.execute(select(Pool.name)).scalars())
    for pool in sorted(named["pools"] - known_pools):
        raise Invalid("pool", f"no pool named {pool}")
    arches.check_named(uow, named["arches"], "host_requires")  # not a silent match-none either
    known_keys = queries.attribute_keys_in_use(session, named["attribute_keys"])
    for key in sorted(named["attribute_keys"] - known_keys):
        raise Invalid("host_requires", f"no system has an attribute named {key}")
    for fqdn in sorted(named["systems"]):
        if not session.execute(select(System.id).where(System.fqdn == fqdn)).first():
            raise Invalid("force", f"no system named {fqdn}")
    for tree in named["distros"]:
        distros.require_match(uow, tree, "distro_requires")


def _group(uow, actor: Actor, name: str | None) -> int | None:
    session = uow.session
    if not name:
        return None
    group = session.execute(select(Group).where(Group.name == name)).scalar_one_or_none()
    if group is None:
        raise Invalid("group", f"no group named {name}")
    if not actor.is_admin and session.get(GroupMember, (group.id, actor.id)) is None:
        raise Forbidden(f"you are not a member of group {name}")
    return group.id


def _unfinished_by_request(uow, actor: Actor, request_id: str | None) -> Job | None:
    if not request_id:
        return None
    return uow.session.execute(select(Job).where(Job.owner_id == actor.id, Job.request_id == request_id,
                                             Job.finished_at.is_(None))).unique().scalar_one_or_none()


def submit(uow, actor: Actor, now: datetime, job: dict, request_id: str | None = None,
           warnings: list | None = None) -> tuple[dict, bool]:
    """Create the job, compute each recipe's candidate systems, and try to place every set now (queue_job);
    the job as `show` answers it, and whether it was created."""
    job_id, created = queue_job(uow, actor, now, job, request_id, warnings)
    uow.session.expire_all()  # relationships loaded before the recipes existed are read again
    return show(uow, actor, now, job_id), created


def queue_job(uow, actor: Actor, now: datetime, job: dict, request_id: str | None = None,
              warnings: list | None = None) -> tuple[int, bool]:
    """Create the job, compute each recipe's candidate systems, and try to place every set now: its id, and
    whether it was created (Beaker's jobs.upload answers only `J:id`, so it never builds the job's view).

    With a request_id naming one of the caller's unfinished jobs, that job is
    returned instead (created False): a retried or re-run submission does not
    queue the same work twice. A different job with that id is refused (409 naming where it differs). Once the job has finished, the id may be used again.
    """
    session = uow.session
    previous = _unfinished_by_request(uow, actor, request_id)
    if previous is not None:
        if previous.request_document is not None:  # (jobs from before it was kept are not compared)
            retries.refuse_changed_retry(request_id, f"job {previous.id}",
                                         retries.document_differences(previous.request_document, job))
        return previous.id, False
    _check_reservesys(job, uow.settings)
    _check_own_kickstarts(job, uow.settings)
    _check_references(uow, job)
    _check_bound_sets(uow, actor, job, now)
    row = Job(owner_id=actor.id, group_id=_group(uow, actor, job.get("group")),
              whiteboard=job.get("whiteboard", ""), status="queued", submitted_at=now, request_id=request_id,
              request_document=job if request_id else None, document=job, warnings=list(warnings or []))
    session.add(row)
    session.flush()
    _add_recipes(uow, actor, now, row, job["recipe_sets"])
    activity.record(uow, actor, now, "job", row.id, "submitted")
    session.flush()
    uow.dispatch()
    session.flush()
    return row.id, True


def _add_recipes(uow, actor: Actor, now: datetime, row: Job, spec_sets: list[dict]) -> None:
    """The job's recipe sets and recipes, written in a few statements whatever its size: one multi-row insert
    per level (sets, recipes, guests; the ORM would insert a row at a time where it must read each id back),
    the requirement classes looked up together, the distro trees read once. A set that could never start is
    refused (409) before anything is committed."""
    session = uow.session
    trees = distros.matcher(uow)
    set_ids = _insert_all(uow, RecipeSet, [
        {"job_id": row.id, "priority": rules.priority_value(spec_set.get("priority", "Normal")),
         "ar_id": spec_set.get("ar"), "status": "queued", "queued_at": now, "multi": len(spec_set["recipes"]) > 1}
        for spec_set in spec_sets], RecipeSet.job_id == row.id)
    sets = {s.id: s for s in session.execute(select(RecipeSet).where(RecipeSet.job_id == row.id)).scalars()}
    hosts, guests = [], []
    for set_id, spec_set in zip(set_ids, spec_sets):
        for spec in spec_set["recipes"]:
            plain = {key: value for key, value in spec.items() if key != "guests"}  # guests are recipes of their own
            found = trees(plain["distro_requires"]) if plain.get("distro_requires") else []
            hosts.append({"recipe_set_id": set_id, "job_id": row.id, "spec": _with_distro_arches(plain, found),
                          "status": "queued", "priority": sets[set_id].priority, "queued_at": now,
                          "distro_tree_id": found[0].id if found else None, "class_id": None})
            guests.append(spec.get("guests", []))
    unbound = [recipe for recipe in hosts if sets[recipe["recipe_set_id"]].ar_id is None]  # an AR's go on its systems
    for recipe, cls in zip(unbound, scheduling.requirement_classes(uow, actor.id, [r["spec"] for r in unbound],
                                                                   now)):
        recipe["class_id"] = cls.id
    in_job = Recipe.job_id == row.id
    host_ids = _insert_all(uow, Recipe, hosts, in_job, Recipe.host_recipe_id.is_(None))
    _insert_all(uow, Recipe, [  # never queued on their own: placed with their host
        {**recipe, "spec": guest, "class_id": None, "host_recipe_id": host_id,
         "distro_tree_id": trees(guest["distro_requires"])[0].id}
        for recipe, host_id, its_guests in zip(hosts, host_ids, guests) for guest in its_guests],
        in_job, Recipe.host_recipe_id.is_not(None))
    # The sets were loaded (their recipes with them, eagerly) before the recipes were inserted: read again,
    # all in one go (each set's on its own had cost a statement per set).
    session.execute(select(RecipeSet).where(RecipeSet.id.in_(set_ids))
                    .execution_options(populate_existing=True)).unique().scalars().all()
    checked = set()  # sets alike (the same classes, as many recipes) could start alike: checked once
    for position, set_id in enumerate(set_ids, 1):
        alike = tuple(sorted(recipe.class_id or 0 for recipe in sets[set_id].recipes))
        if alike not in checked:
            scheduling.refuse_never_starting(uow, sets[set_id], position)  # 409: nothing is written
            checked.add(alike)
    uow.emit(RecipeSetQueued(tuple(set_ids), now))


def _insert_all(uow, table, rows: list[dict], *where) -> list[int]:
    """Insert the job's rows in one statement (executemany) and the ids of the rows `where` finds (those rows:
    the new job's) in the same order: ids grow as rows are inserted, and nobody else writes rows of a job that
    is not committed yet."""
    session = uow.session
    if not rows:
        return []
    session.execute(insert(table), rows)
    return list(session.execute(select(table.id).where(*where).order_by(table.id)).scalars())


def _with_distro_arches(spec: dict, trees: list) -> dict:
    """A recipe that installs a distro needs a system of an arch that distro has a tree for."""
    if not spec.get("distro_requires"):
        return spec
    arches = sorted({t.arch for t in trees})
    arch_leaf = {"or": [{"field": "arch", "op": "=", "value": a} for a in arches]}
    host = spec.get("host_requires")
    return {**spec, "host_requires": {"and": [host, arch_leaf]} if host else arch_leaf}


def visible_job(uow, actor: Actor, job_id: int) -> Job:
    job = uow.session.get(Job, job_id)
    if job is None or not (actor.is_admin or job.owner_id == actor.id or
                           (job.group_id is not None and job.group_id in actor.group_ids)):
        raise NotFound(f"no job {job_id}")
    return job


def recipe_dict(uow, recipe: Recipe) -> dict:
    """A recipe; a host recipe lists its guests with what its harness needs to start them."""
    out = {"id": recipe.id, "status": recipe.status, "result": recipe.result,
           "system": recipe.system.fqdn if recipe.system else None,
           "whiteboard": recipe.spec.get("whiteboard", ""), "started_at": format_time(recipe.started_at),
           "finished_at": format_time(recipe.finished_at), "distro_tree": recipe.distro_tree_id,
           "reservation": recipe.reservation_id}
    if recipe.host_recipe_id is not None:
        return out | {"host": recipe.host_recipe_id} | guests.guest_dict(uow, recipe)
    if recipe.guests:
        out["guests"] = [recipe_dict(uow, guest) for guest in recipe.guests]
    return out


def load_guests(uow, job: Job) -> None:
    """Every host recipe's guests in one query: Recipe.guests is lazy (the scheduler never reads it), and read
    recipe by recipe it costs a query each, 100 for a 100-recipe job."""
    uow.session.execute(select(Recipe).where(Recipe.job_id == job.id, Recipe.host_recipe_id.is_(None))
                    .options(selectinload(Recipe.guests))).scalars().all()


def job_dict(uow, job: Job) -> dict:
    return {
        "id": job.id, "owner": job.owner.name, "whiteboard": job.whiteboard, "status": job.status,
        "result": job.result, "submitted_at": format_time(job.submitted_at), "finished_at": format_time(job.finished_at),
        "request_id": job.request_id, "warnings": list(job.warnings or []),
        "recipe_sets": [{"id": rs.id, "priority": rules.PRIORITIES[rs.priority], "status": rs.status,
                         "result": rs.result, "ar": rs.ar_id, "recipes": [recipe_dict(uow, r) for r in rs.recipes]}
                        for rs in job.recipe_sets],
    }


def show(uow, actor: Actor, now: datetime, job_id: int) -> dict:
    job = visible_job(uow, actor, job_id)
    load_guests(uow, job)  # (listing loads them with its jobs)
    return job_dict(uow, job)


def listing(uow, actor: Actor, mine: bool = True, status: str | None = None, request_id: str | None = None,
            page: PageRequest = PageRequest()) -> Page:
    query = select(Job).options(  # the hosts' guests in one query, not one each
        selectinload(Job.recipe_sets).selectinload(RecipeSet.recipes).selectinload(Recipe.guests))
    if request_id:
        query = query.where(Job.request_id == request_id)
    if mine or not actor.is_admin:
        query = query.where(Job.owner_id == actor.id)
    if status:
        query = query.where(Job.status == status)
    found = paging.fetch(uow, "jobs", query, [Order(Job.id, descending=True)], page)
    return Page([job_dict(uow, job) for job in found.items], found.next_after)


def _recipe(uow, actor: Actor, recipe_id: int) -> Recipe:
    recipe = uow.session.get(Recipe, recipe_id)
    if recipe is None:
        raise NotFound(f"no recipe {recipe_id}")
    visible_job(uow, actor, recipe.job_id)
    return recipe


def show_recipe(uow, actor: Actor, now: datetime, recipe_id: int, summaries=None) -> dict:
    """summaries (waiting.Summaries): why it waits from its candidate list, not each system's verdict."""
    recipe = _recipe(uow, actor, recipe_id)
    body = recipe_dict(uow, recipe) | {
        "job": recipe.job_id, "recipe_set": recipe.recipe_set_id, "reservation": recipe.reservation_id,
        "watchdog": format_time(recipe.watchdog_at), "spec": _shown_spec(recipe.spec, uow.settings),
        "tasks": recipe.task_results or [],
    }
    if recipe.status in placement.WAITING:
        body["why"] = _why_guest_waits(uow, recipe, now) if recipe.host_recipe_id else waiting.why_waiting(
            uow, recipe, now, summaries=summaries)
    return body


def _why_guest_waits(uow, guest: Recipe, now: datetime) -> dict:
    """A guest is placed with its host: its host's reasons are its own."""
    host = uow.session.get(Recipe, guest.host_recipe_id)
    why = waiting.why_waiting(uow, host, now)
    return why | {"message": f"placed with its host recipe {host.id}, which waits: {why['message']}"}


def _shown_spec(spec: dict, settings) -> dict:
    """The recipe as submitted, its secret ks_meta values masked (domain/variables.py)."""
    if not spec.get("ks_meta"):
        return spec
    return {**spec, "ks_meta": masked_ks_meta(spec["ks_meta"], getattr(settings, "secret_variables", ()))}


def _may_report(uow, actor: Actor, recipe: Recipe) -> None:
    job = uow.session.get(Job, recipe.job_id)
    if not (actor.is_admin or job.owner_id == actor.id):
        raise Forbidden(f"only the owner of job {job.id} (or an admin) may report on its recipes")


def update_recipe(uow, actor: Actor, now: datetime, recipe_id: int, data: dict) -> dict:
    """Report task results, and/or finish: {status: completed, result} or {status: aborted}."""
    recipe = _recipe(uow, actor, recipe_id)
    _may_report(uow, actor, recipe)
    if data.get("tasks"):
        recipe.task_results = list(recipe.task_results or []) + data["tasks"]
        recipe.result = rules.worst_result([recipe.result] + [t["result"] for t in data["tasks"]])
    status = data.get("status")
    if status == "completed":
        if recipe.status != "running":
            raise Invalid("status", f"only a running recipe can complete; recipe {recipe_id} is {recipe.status}")
        result = data.get("result") or recipe.result
        recipe.result = rules.worst_result([recipe.result, result])
        finish(uow, recipe, "completed", now, actor)
    elif status in ("aborted", "cancelled"):
        finish(uow, recipe, status, now, actor)
    elif status is not None:
        raise Invalid("status", "must be completed, aborted or cancelled")
    placement.refresh_rollups(uow, recipe.recipe_set, now)
    return show_recipe(uow, actor, now, recipe_id)


def finish(uow, recipe: Recipe, status: str, now: datetime, actor: Actor | None) -> None:
    """End a recipe; its system is kept for the owner (reservesys) or freed for the queue."""
    session = uow.session
    rules.check_transition(recipe.status, status)
    was = recipe.status
    recipe.status, recipe.finished_at, recipe.watchdog_at = status, now, None
    activity.record(uow, actor, now, "recipe", recipe.id, status, "status", was, status)
    uow.emit(RecipeFinished(recipe.id, status, now))  # a health check's outcome (services/lifecycle/health.py)
    for guest in recipe.guests:  # nothing runs a guest once its host has ended
        if guest.status not in rules.FINISHED:
            finish(uow, guest, guest_rules.ending_for_guest(status), now, actor)
    if recipe.reservation_id is None:
        return
    reservation = session.get(Reservation, recipe.reservation_id)
    system = session.get(System, recipe.system_id)
    usage.set_usage(uow, system, "idle", now)
    reservesys = recipe.spec.get("reservesys")
    if was != "assigned" and not system.guest and rules.keeps_system(reservesys, status, recipe.result):
        _keep_for_owner(uow, reservation, system, now, timedelta(seconds=reservesys.get("duration", 86400)))
        notices.recipe_reserved(uow, recipe, reservation, system.fqdn, now)
    else:
        close_reservation(uow, reservation, now, "recipe_finished", actor)
    if system.guest:
        guests.retire(uow, system, now)


def _keep_for_owner(uow, reservation: Reservation, system: System, now: datetime, asked: timedelta) -> None:
    """reservesys: the recipe's booking becomes the owner's reservation until now + duration, within the
    site's maximum as it is now and the owner's loan, shortened to the next booking if one comes sooner."""
    session = uow.session
    booking = session.get(Booking, reservation.booking_id)
    settings = uow.settings
    resource = calendar.lock_resource(uow, system.resource_id)
    following = session.execute(select(Booking.start_at).where(
        Booking.resource_id == resource.id, Booking.id != booking.id, Booking.start_at >= now)
        .order_by(Booking.start_at).limit(1)).scalar_one_or_none()
    end, why = reservation_rules.kept_end(settings.reservation_policy, now, asked, loan_end_of(uow, system.id, reservation.user_id),
                                          following)
    calendar.change_end(session, resource, booking, end)
    reservation.kind, reservation.end_at = "manual", end
    reservation.due_at = due_at(end, None, None)
    reservation.warn_at = warn_at(reservation.start_at, end, settings.warn_before, settings.warn_before_short)
    booking.kind = "reservation"
    if why is not None:
        activity.record(uow, None, now, "reservation", reservation.id, "shortened", "duration",
                        format_duration(asked), f"{format_duration(end - now)} ({why})")
    activity.record(uow, None, now, "reservation", reservation.id, "kept", "end", None, end)
    uow.wake_worker()


def cancel(uow, actor: Actor, now: datetime, job_id: int) -> dict:
    job = visible_job(uow, actor, job_id)
    if not (actor.is_admin or job.owner_id == actor.id):
        raise Forbidden(f"only the owner of job {job_id} (or an admin) may cancel it")
    for recipe_set in job.recipe_sets:
        cancel_set(uow, actor, now, recipe_set)
    return show(uow, actor, now, job_id)


def cancel_set(uow, actor: Actor, now: datetime, recipe_set: RecipeSet) -> None:
    """Cancel a recipe set's unfinished recipes (their guests with them); the caller checked who may."""
    for recipe in recipe_set.recipes:
        if recipe.status not in rules.FINISHED:
            if recipe.status == "assigned":
                placement.release(uow, recipe_set, now)
            finish(uow, recipe, "cancelled", now, actor)
    placement.refresh_rollups(uow, recipe_set, now)


def set_watchdog(uow, actor: Actor, recipe: Recipe, end: datetime, now: datetime) -> None:
    """Move an unfinished recipe's end (Beaker's watchdog extend): the worker aborts it then. A booking that
    ends with the recipe's runtime limit moves with it, never into the next booking."""
    session = uow.session
    reservation = session.get(Reservation, recipe.reservation_id) if recipe.reservation_id else None
    booking = session.get(Booking, reservation.booking_id) if reservation and reservation.booking_id else None
    if booking is not None and booking.end_at is not None:
        system = session.get(System, recipe.system_id)
        calendar.change_end(session, calendar.lock_resource(uow, system.resource_id), booking, max(end, now))
        reservation.end_at = booking.end_at
    activity.record(uow, actor, now, "recipe", recipe.id, "watchdog", "watchdog_at", recipe.watchdog_at, end)
    recipe.watchdog_at = end
    uow.wake_worker()


def _abort_overdue(uow, recipe: Recipe, now: datetime) -> None:
    """The watchdog: a recipe past its runtime limit is aborted."""
    finish(uow, recipe, "aborted", now, None)
    activity.record(uow, None, now, "recipe", recipe.id, "watchdog", "reason", None,
                    "runtime limit reached")
    placement.refresh_rollups(uow, recipe.recipe_set, now)


OVERDUE = due.Step("recipe_watchdog", "aborted recipe past its runtime limit", Recipe, Recipe.watchdog_at,
                   Recipe.status.notin_(rules.FINISHED), _abort_overdue, "recipe")
REPAIR = "recipe_repair"  # the kind of a parked repair
_REPAIRABLE = ("queued", "assigned", "waiting")


def needing_repair(uow) -> list[int]:
    """Recipes waiting for a distro tree that no longer exists (removing a tree sets theirs to NULL)."""
    query = select(Recipe).where(Recipe.status.in_(_REPAIRABLE), due.not_parked(REPAIR, Recipe.id),
                                 Recipe.distro_tree_id.is_(None))
    return [r.id for r in uow.session.execute(query).unique().scalars() if r.spec.get("distro_requires")]


def repair(uow, recipe_id: int, now: datetime) -> bool:
    """A recipe whose distro tree vanished is aborted; False when it needs nothing (any more)."""
    recipe = uow.session.get(Recipe, recipe_id)
    if recipe is None or recipe.status not in _REPAIRABLE:
        return False
    if recipe.status == "assigned":
        placement.release(uow, recipe.recipe_set, now)
    finish(uow, recipe, "aborted", now, None)
    activity.record(uow, None, now, "recipe", recipe.id, "repair", "reason", None,
                    "its distro tree no longer exists")
    placement.refresh_rollups(uow, recipe.recipe_set, now)
    return True


def on_distro_tree_removed(uow, event: DistroTreeRemoved) -> None:
    """The repair pass for the recipes a removed tree leaves without one, at once (not at the next slow pass)."""
    uow.session.flush()  # the delete: the database sets their distro_tree_id to NULL
    for recipe_id in needing_repair(uow):
        repair(uow, recipe_id, event.now)


def on_recipe_aborted(uow, event: RecipeAborted) -> None:
    """A recipe cannot go on (its installation failed, no guest system for it): it ends as aborted."""
    recipe = uow.session.get(Recipe, event.recipe_id)
    finish(uow, recipe, "aborted", event.now, None)
    activity.record(uow, None, event.now, "recipe", recipe.id, "aborted", "reason", None, event.why)
    if event.refresh:
        placement.refresh_rollups(uow, recipe.recipe_set, event.now)


def on_recipe_system_taken(uow, event: RecipeSystemTaken) -> None:
    """The server ends the reservation a recipe holds (services/booking/endings.py): a set only holding the system
    gives its systems back and queues again; a recipe using it is aborted, saying why."""
    recipe = uow.session.get(Recipe, event.recipe_id)
    if recipe.status == "assigned":
        placement.release(uow, recipe.recipe_set, event.now)
        return
    finish(uow, recipe, "aborted", event.now, None)
    activity.record(uow, None, event.now, "recipe", recipe.id, "aborted", "reason", None, event.why)
    placement.refresh_rollups(uow, recipe.recipe_set, event.now)
