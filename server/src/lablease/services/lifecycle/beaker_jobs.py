"""Jobs as Beaker's clients see them: submit, list, results XML, task info, stop, watchdog.

The same use cases as /api/v1 (jobs.submit, jobs.cancel, lease.extend, lease.return_with_cascade); what is
Beaker's here is only the naming (domain/beaker_runs.py) and the XML (jobxml/results.py). docs/beaker.md.
"""
from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import or_, select

from ...domain import beaker_runs as runs
from ...domain import recipes as rules
from ...domain.errors import Forbidden, Invalid, NotFound, Unauthenticated
from ...domain.permissions import Actor
from ...domain.variables import masked_ks_meta
from ...jobxml import parse_job_xml_with_warnings, render_job_xml
from ...jobxml import results as results_xml
from ...jobxml.normalise import complete as complete_job
from ...store.tables import DistroTree, Group, GroupMember, Job, Recipe, RecipeSet, Reservation, System, User
from ..catalog import distros
from ..queue import placement
from . import jobs, lease
from .job_export import document_of_old


def upload(uow, actor: Actor, now: datetime, document: str | bytes) -> str:
    """jobs.upload: the job XML through the same hardened parser and submission as POST /jobs; 'J:id'.

    lablease has no task library, so there is no missing task to ignore (ignore_missing_tasks changes nothing)."""
    data = document.encode("utf-8") if isinstance(document, str) else document
    job, warnings = parse_job_xml_with_warnings(data)
    job_id, _ = jobs.queue_job(uow, actor, now, job, None, warnings)
    return f"J:{job_id}"


# --- reading a job's run -----------------------------------------------------------------------------------

def _visible(uow, actor: Actor | None, job_id: int) -> Job:
    """The job if the caller may read it: its owner, group and admins (jobs.visible_job), or anyone who has
    not logged in where the site makes jobs public as Beaker does (setting beaker_public_jobs)."""
    if actor is not None:
        return jobs.visible_job(uow, actor, job_id)
    if not uow.settings.beaker_public_jobs:
        raise Unauthenticated("this lablease shows a job only to its owner, group and administrators, and this "
                              "bkr command does not log in (an administrator may set beaker_public_jobs)")
    job = uow.session.get(Job, job_id)
    if job is None:
        raise NotFound(f"no job {job_id}")
    return job


def _job_of(uow, actor: Actor | None, kind: str, number: int) -> tuple[Job, object]:
    """The job a taskspec names, and the part it names (a Job, RecipeSet, Recipe or (Recipe, position))."""
    session = uow.session
    if kind == "J":
        job = _visible(uow, actor, number)
        return job, job
    if kind == "RS":
        part = session.get(RecipeSet, number)
        if part is None:
            raise NotFound(f"no recipe set {number}")
        return _visible(uow, actor, part.job_id), part
    recipe_id, position = runs.split_task_id(number) if kind == "T" else (number, 0)
    recipe = session.get(Recipe, recipe_id)
    if recipe is None or (kind == "T" and not 1 <= position <= len(recipe.spec.get("tasks") or ())):
        raise NotFound(f"no {'task' if kind == 'T' else 'recipe'} {number}")
    job = _visible(uow, actor, recipe.job_id)
    return job, (recipe, position) if kind == "T" else recipe


def _kept(uow, job: Job, now: datetime) -> set[int]:
    """The recipes whose reservesys reservation still holds their system (Beaker's Reserved)."""
    finished = [r for rs in job.recipe_sets for r in rs.every_recipe()
                if r.status in rules.FINISHED and r.reservation_id is not None]
    if not finished:
        return set()
    held = set(uow.session.execute(select(Reservation.id).where(
        Reservation.id.in_([r.reservation_id for r in finished]), Reservation.kind == "manual",
        Reservation.returned_at.is_(None), or_(Reservation.end_at.is_(None), Reservation.end_at > now))).scalars())
    return {r.id for r in finished if r.reservation_id in held}


def _run(recipe: Recipe, kept: set[int]) -> runs.RecipeRun:
    return runs.RecipeRun(recipe.id, recipe.status, recipe.result, recipe.id in kept,
                          tuple(recipe.spec.get("tasks") or ()), tuple(recipe.task_results or ()),
                          tuple(_run(guest, kept) for guest in recipe.guests), recipe.started_at, recipe.finished_at)


def _recipe_view(recipe: Recipe, run: runs.RecipeRun, trees: dict) -> dict:
    tree = trees.get(recipe.distro_tree_id)
    return {"id": recipe.id, "job_id": recipe.job_id, "recipe_set_id": recipe.recipe_set_id,
            "status": runs.recipe_status(run), "result": runs.recipe_result(run),
            "system": recipe.system.fqdn if recipe.system else None, "whiteboard": recipe.spec.get("whiteboard"),
            "distro": tree and {"name": tree.name, "arch": tree.arch, "family": tree.family,
                                "variant": tree.variant},
            "start_time": recipe.started_at, "finish_time": recipe.finished_at, "tasks": runs.task_runs(run),
            "guests": [_recipe_view(guest, guest_run, trees) for guest, guest_run in zip(recipe.guests, run.guests)],
            "run": run}


def job_view(uow, job: Job, now: datetime) -> dict:
    """The job with every part named as Beaker names it (jobxml/results.py describes the shape)."""
    session = uow.session
    jobs.load_guests(uow, job)
    kept = _kept(uow, job, now)
    every = [r for rs in job.recipe_sets for r in rs.every_recipe()]
    tree_ids = {r.distro_tree_id for r in every if r.distro_tree_id is not None}
    trees = {t.id: t for t in session.execute(select(DistroTree).where(DistroTree.id.in_(tree_ids))).scalars()}
    sets = []
    for recipe_set in job.recipe_sets:
        recipes = [_recipe_view(r, _run(r, kept), trees) for r in recipe_set.recipes]
        status, result = runs.rollup(view["run"] for view in recipes)
        sets.append({"id": recipe_set.id, "priority": rules.PRIORITIES[recipe_set.priority], "status": status,
                     "result": result, "recipes": recipes})
    status, result = runs.rollup(view["run"] for s in sets for view in s["recipes"])
    group = session.get(Group, job.group_id) if job.group_id is not None else None
    return {"id": job.id, "owner": job.owner.name, "group": group.name if group else None,
            "whiteboard": job.whiteboard, "status": status, "result": result,
            "document": _masked(job.document if job.document is not None else document_of_old(uow, job),
                                uow.settings),
            "recipe_sets": sets}


def _masked(document: dict, settings) -> dict:
    """The job as asked, complete (jobxml.normalise.complete: it was checked when submitted) and its secret
    ks_meta values masked as the API shows them (domain/variables.py)."""
    patterns = settings.secret_variables
    document = complete_job(document)

    def recipe(spec: dict) -> dict:
        return {**spec, "ks_meta": masked_ks_meta(spec["ks_meta"], patterns) if spec.get("ks_meta") else "",
                "guests": [recipe(guest) for guest in spec.get("guests", ())]}
    return {**document, "recipe_sets": [{**rs, "recipes": [recipe(r) for r in rs["recipes"]]}
                                        for rs in document["recipe_sets"]]}


def _find_recipe(view: dict, recipe_id: int) -> tuple[dict, dict]:
    """(recipe view, its spec as asked) for a recipe of the job, a guest too."""
    for recipe_set, asked in zip(view["recipe_sets"], view["document"]["recipe_sets"]):
        for recipe, spec in zip(recipe_set["recipes"], asked["recipes"]):
            if recipe["id"] == recipe_id:
                return recipe, spec
            for guest, guest_spec in zip(recipe["guests"], spec.get("guests", ())):
                if guest["id"] == recipe_id:
                    return guest, guest_spec
    raise NotFound(f"no recipe {recipe_id}")


def _subset(view: dict, document: dict, kind: str, number: int, part) -> tuple[list, list]:
    """(recipe set views, their documents) holding only the part a RS: or R: taskspec names."""
    for recipe_set, asked in zip(view["recipe_sets"], document["recipe_sets"]):
        if kind == "RS" and recipe_set["id"] == number:
            return [recipe_set], [asked]
        for recipe, spec in zip(recipe_set["recipes"], asked["recipes"]):
            if kind == "R" and recipe["id"] in (number, part.host_recipe_id):
                return [{**recipe_set, "recipes": [recipe]}], [{**asked, "recipes": [spec]}]
    raise NotFound(f"no {kind} {number}")


def to_xml(uow, actor: Actor, now: datetime, taskspec: str, clone: bool = False, enclosing: bool = False) -> bytes:
    """taskactions.to_xml: Beaker's results XML of a job, recipe set, recipe or task; with `clone`, the job XML
    that submits the same work again (an RS: or R: inside its job); with `enclosing`, an RS: or R: inside its
    <job>."""
    kind, number = runs.parse_taskspec(taskspec)
    job, part = _job_of(uow, actor, kind, number)
    view = job_view(uow, job, now)
    document = view["document"]
    if kind == "T":
        recipe, spec = _find_recipe(view, part[0].id)
        return results_xml.to_bytes(results_xml.task_element(recipe, spec, part[1]))
    if kind != "J":
        sets, asked = _subset(view, document, kind, number, part)
        view, document = {**view, "recipe_sets": sets}, {**document, "recipe_sets": asked}
    if clone:
        return render_job_xml(document)
    if kind == "J" or enclosing:
        return results_xml.to_bytes(results_xml.job_element({**view, "document": document}))
    if kind == "RS":
        return results_xml.to_bytes(results_xml.recipe_set_element(view["recipe_sets"][0], asked[0]))
    recipe, spec = _find_recipe({**view, "document": document}, number)
    return results_xml.to_bytes(results_xml.recipe_xml(recipe, spec, "guestrecipe" if part.host_recipe_id
                                                       else "recipe"))


def junit(uow, actor: Actor, now: datetime, job_id: int) -> bytes:
    return results_xml.junit_xml(job_view(uow, _visible(uow, actor, job_id), now))


def task_info(uow, actor: Actor, now: datetime, taskspec: str) -> dict:
    """taskactions.task_info: what `bkr job-watch` polls; is_finished and is_failed decide its exit status."""
    kind, number = runs.parse_taskspec(taskspec)
    job, part = _job_of(uow, actor, kind, number)
    view = job_view(uow, job, now)
    group = view["group"]
    if kind == "J":
        status, result, method, worker = view["status"], view["result"], view["whiteboard"], None
    elif kind == "RS":
        found = next(s for s in view["recipe_sets"] if s["id"] == number)
        status, result, method, worker = found["status"], found["result"], None, None
    else:
        recipe, _ = _find_recipe(view, part.id if kind == "R" else part[0].id)
        worker = {"name": recipe["system"]} if recipe["system"] else None
        if kind == "R":
            status, result, method = recipe["status"], recipe["result"], recipe["whiteboard"] or ""
        else:
            task = recipe["tasks"][part[1] - 1]
            status, result, method = task.status, task.result, task.name
    return {"id": taskspec, "worker": worker, "state_label": status, "state": status, "method": method,
            "result": result, "is_finished": runs.is_finished(status), "is_failed": runs.is_failed(result),
            "owner": view["owner"], "submitter": view["owner"], "group": group or "None"}


def files(uow, actor: Actor, now: datetime, taskspec: str) -> list:
    """taskactions.files: lablease keeps no result logs, so a visible part has none."""
    kind, number = runs.parse_taskspec(taskspec)
    _job_of(uow, actor, kind, number)
    return []


# --- stopping ------------------------------------------------------------------------------------------------

def stop(uow, actor: Actor, now: datetime, taskspec: str, stop_type: str) -> bool:
    """taskactions.stop: cancel a job (J:) or one recipe set (RS:), as Beaker does: its unfinished recipes are
    cancelled and the systems its Reserved recipes still keep (reservesys) are returned."""
    if stop_type != "cancel":
        raise Invalid("stop_type", f"{stop_type!r}: only 'cancel' is supported (Beaker keeps the others for "
                                   "its own use)")
    kind, number = runs.parse_taskspec(taskspec, ("J", "RS"))
    job, part = _job_of(uow, actor, kind, number)
    if not (actor.is_admin or job.owner_id == actor.id):
        raise Forbidden(f"only the owner of job {job.id} (or an admin) may cancel it")
    kept = _kept(uow, job, now)
    sets = job.recipe_sets if kind == "J" else [part]
    for recipe_set in sets:
        jobs.cancel_set(uow, actor, now, recipe_set)
        for recipe in recipe_set.every_recipe():
            if recipe.id in kept:
                lease.return_with_cascade(uow, actor, now, recipe.reservation_id)
    return True


# --- listing -------------------------------------------------------------------------------------------------

def filter_ids(uow, actor: Actor | None, filters: dict) -> list[str]:
    """jobs.filter: 'J:id' of the jobs matching, newest first, among those the caller may see (without a
    login, every job where the site makes them public: _visible)."""
    session = uow.session
    query = select(Job.id).order_by(Job.id.desc())
    if actor is None:
        if filters.get("mine") or filters.get("my_groups"):
            raise Unauthenticated("log in to list your own or your groups' jobs")
        if not uow.settings.beaker_public_jobs:
            raise Unauthenticated("this lablease lists jobs only to those who log in (an administrator may set "
                                  "beaker_public_jobs)")
    elif not actor.is_admin:  # one's own jobs and one's groups' (jobs.visible_job)
        query = query.where(or_(Job.owner_id == actor.id, Job.group_id.in_(
            select(GroupMember.group_id).where(GroupMember.user_id == actor.id))))
    owners = _names(filters.get("owner"))
    if filters.get("mine"):
        owners.append(actor.name)
    if owners:
        query = query.where(Job.owner_id.in_(select(User.id).where(User.name.in_(owners))))
    groups = _names(filters.get("group"))
    if filters.get("my_groups"):
        groups += list(session.execute(select(Group.name).join(GroupMember, GroupMember.group_id == Group.id)
                                       .where(GroupMember.user_id == actor.id)).scalars())
    if groups:
        query = query.where(Job.group_id.in_(select(Group.id).where(Group.name.in_(groups))))
    if filters.get("whiteboard"):
        query = query.where(Job.whiteboard.contains(str(filters["whiteboard"]), autoescape=True))
    for key, compare in (("minid", Job.id.__ge__), ("maxid", Job.id.__le__)):
        if filters.get(key):
            query = query.where(compare(_number(filters[key], key)))
    if filters.get("is_finished") is True:
        query = query.where(Job.finished_at.is_not(None))
    elif filters.get("is_finished") is False:
        query = query.where(Job.finished_at.is_(None))
    if filters.get("limit"):
        query = query.limit(_number(filters["limit"], "limit"))
    return [f"J:{job_id}" for job_id in session.execute(query).scalars()]


def _names(value) -> list[str]:
    if value is None or value == "":
        return []
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]


def _number(value, field: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise Invalid(field, f"{value!r} is not a number") from None
    if number <= 0:
        raise Invalid(field, "must be a positive number")
    return number


# --- the watchdog: a recipe's end -----------------------------------------------------------------------------

def _watched(uow, actor: Actor | None, now: datetime, taskspec: str) -> tuple[Recipe, Reservation | None]:
    """The recipe a taskspec (R:, T: or a bare task id) names, and the reservation its reservesys keeps."""
    text = str(taskspec)
    kind, number = runs.parse_taskspec(text if ":" in text else f"T:{text}", ("R", "T"))
    job, part = _job_of(uow, actor, kind, number)
    recipe = part if kind == "R" else part[0]
    kept = _kept(uow, job, now)
    return recipe, uow.session.get(Reservation, recipe.reservation_id) if recipe.id in kept else None


def _seconds_left(recipe: Recipe, kept: Reservation | None, now: datetime):
    end = kept.end_at if kept is not None else recipe.watchdog_at
    if end is None or (kept is None and recipe.status in rules.FINISHED):
        return False
    return max(0, int((end - now).total_seconds()))


def watchdog(uow, actor: Actor, now: datetime, taskspec: str):
    """recipes.tasks.watchdog / recipes.watchdog: seconds left before the recipe's end, False when none:
    a running recipe's runtime limit, a Reserved recipe's reservation end."""
    recipe, kept = _watched(uow, actor, now, taskspec)
    return _seconds_left(recipe, kept, now)


def running_on(uow, actor: Actor, fqdn: str) -> str:
    """The R:id of the recipe running (or Reserved) on a system, for `bkr watchdog-extend FQDN`."""
    session = uow.session
    system = session.execute(select(System).where(System.fqdn == fqdn)).scalar_one_or_none()
    if system is not None:
        recipe_id = session.execute(select(Recipe.id).join(Reservation, Reservation.id == Recipe.reservation_id)
                                    .where(Reservation.system_id == system.id, Reservation.returned_at.is_(None))
                                    .order_by(Recipe.id.desc()).limit(1)).scalar_one_or_none()
        if recipe_id is not None:
            return f"R:{recipe_id}"
    raise NotFound(f"cannot find any recipe running on {fqdn}")


def extend_watchdog(uow, actor: Actor, now: datetime, taskspec: str, seconds) -> int | bool:
    """Beaker's extend: the recipe's end becomes now + seconds (0 ends it now). A running recipe's runtime
    limit moves (the worker aborts it when it comes); a Reserved recipe's reservation is extended (or
    shortened) by lablease's own extend, within the site's maximum and the next booking, or returned at 0."""
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
        raise Invalid("kill_time", f"{seconds!r}: give the number of seconds from now")
    session = uow.session
    recipe, kept = _watched(uow, actor, now, taskspec)
    job = session.get(Job, recipe.job_id)
    if not (actor.is_admin or job.owner_id == actor.id):
        raise Forbidden(f"only the owner of job {job.id} (or an admin) may extend its watchdog")
    if kept is not None:
        if not seconds:
            lease.return_with_cascade(uow, actor, now, kept.id, "returned")
            return False
        lease.extend(uow, actor, now, uow.settings.reservation_policy, kept.id, end=now + timedelta(seconds=seconds))
        return int(seconds)
    if recipe.status in rules.FINISHED:
        raise Invalid("taskspec", f"recipe {recipe.id} is {recipe.status}: it has no watchdog to extend")
    jobs.set_watchdog(uow, actor, recipe, now + timedelta(seconds=seconds), now)
    placement.refresh_rollups(uow, recipe.recipe_set, now)
    return int(seconds)


# --- what `bkr workflow-simple` asks before it writes a job -------------------------------------------------

def osmajor_of(uow, name: str) -> str:
    """distros.get_osmajor: the family (Beaker's OS major) of the distro of that name."""
    trees = distros.matching(uow, {"field": "distro_name", "op": "=", "value": str(name)})
    if not trees:
        raise Invalid("distro", f"no distro named {name}")
    return trees[0].family or trees[0].name


def arches_of(uow, filters: dict) -> list[str]:
    """distros.get_arch: the arches the newest distro matching (by name or family, variant, tags) has trees of."""
    leaves = [{"field": field, "op": "=", "value": str(filters[key])}
              for key, field in (("distro", "distro_name"), ("osmajor", "distro_family"),
                                 ("variant", "distro_variant")) if filters.get(key)]
    leaves += [{"field": "distro_tag", "op": "=", "value": str(tag)} for tag in filters.get("tags") or ()]
    trees = distros.matching(uow, {"and": leaves})
    if not trees:
        raise Invalid("distro", f"no distro matches {filters!r}")
    newest = (trees[0].name, trees[0].family)
    return sorted({t.arch for t in trees if (t.name, t.family) == newest})
