"""Beaker's results XML and JUnit XML of a job's run (`bkr job-results`, mrack, tmt read them).

The job is written as it was asked for (render.py: the document resubmits, its
run data dropped with a warning by exported.py), with the run's ids, Beaker's
status and result names and the system on each element. The values come in
plain (services/lifecycle/beaker_jobs.py builds them, domain/beaker_runs.py names them):

    job = {"id", "owner", "group", "whiteboard", "status", "result", "document" (the job as asked, normalised),
           "recipe_sets": [{"id", "priority", "status", "result", "recipes": [recipe]}]}
    recipe = {"id", "job_id", "recipe_set_id", "status", "result", "system", "distro": {"name", "arch",
              "family", "variant"} or None, "start_time", "finish_time", "tasks": [TaskRun], "guests": [recipe]}
"""
from __future__ import annotations

from lxml import etree

from .render import recipe_element


def _when(value) -> str | None:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value is not None else None


def _set(element, **attributes) -> None:
    for name, value in attributes.items():
        if value is not None:
            element.set(name, str(value))


def job_element(job: dict):
    document = job["document"]
    root = etree.Element("job")
    _set(root, id=job["id"], owner=job["owner"], result=job["result"], status=job["status"], group=job["group"])
    if document["notify"]["cc"]:
        notify = etree.SubElement(root, "notify")
        for address in document["notify"]["cc"]:
            etree.SubElement(notify, "cc").text = address
    etree.SubElement(root, "whiteboard").text = job["whiteboard"] or ""
    for recipe_set, asked in zip(job["recipe_sets"], document["recipe_sets"]):
        root.append(recipe_set_element(recipe_set, asked))
    return root


def recipe_set_element(recipe_set: dict, asked: dict):
    element = etree.Element("recipeSet")
    _set(element, priority=recipe_set["priority"], response="ack", id=recipe_set["id"],
         result=recipe_set["result"], status=recipe_set["status"])
    for recipe, spec in zip(recipe_set["recipes"], asked["recipes"]):
        element.append(recipe_xml(recipe, spec))
    return element


def recipe_xml(recipe: dict, spec: dict, tag: str = "recipe"):
    """The recipe as asked (its guests inside it), with its run on it and on each of its tasks."""
    element = recipe_element(tag, spec)
    _decorate(element, recipe)
    return element


def _decorate(element, recipe: dict) -> None:
    distro = recipe["distro"] or {}
    _set(element, id=recipe["id"], job_id=recipe["job_id"], recipe_set_id=recipe["recipe_set_id"],
         result=recipe["result"], status=recipe["status"], distro=distro.get("name"), arch=distro.get("arch"),
         family=distro.get("family"), variant=distro.get("variant"), system=recipe["system"],
         start_time=_when(recipe["start_time"]), finish_time=_when(recipe["finish_time"]))
    for task_element, task in zip(element.findall("task"), recipe["tasks"]):
        _set(task_element, id=task.id, result=task.result, status=task.status)
        if task.results:
            results = etree.SubElement(task_element, "results")
            for result in task.results:
                etree.SubElement(results, "result", path=result["path"], result=result["result"],
                                 score="").text = result["message"]
    for guest_element, guest in zip(element.findall("guestrecipe"), recipe["guests"]):
        _decorate(guest_element, guest)


def task_element(recipe: dict, spec: dict, position: int):
    """T:id alone: the task element of its recipe, with its run."""
    return recipe_xml(recipe, spec).findall("task")[position - 1]


def to_bytes(element) -> bytes:
    return etree.tostring(element, encoding="UTF-8")


def junit_xml(job: dict) -> bytes:
    """Beaker's JUnit form: a testsuite per recipe (guests too), a testcase per finished task and per result."""
    suites = etree.Element("testsuites")
    for recipe_set in job["recipe_sets"]:
        for host in recipe_set["recipes"]:
            for recipe in (host, *host["guests"]):
                suites.append(_suite(recipe))
    return etree.tostring(suites, encoding="UTF-8", xml_declaration=True, pretty_print=True)


def _suite(recipe: dict):
    suite = etree.Element("testsuite", id=f"R:{recipe['id']}", name=recipe.get("whiteboard") or "")
    _set(suite, hostname=recipe["system"])
    for task in recipe["tasks"]:
        if task.status not in ("Completed", "Cancelled", "Aborted"):
            continue
        case = etree.SubElement(suite, "testcase", classname=task.name, name="(main)")
        _outcome(case, task.status, task.result, "")
        etree.SubElement(case, "system-out")
        for result in task.results:
            case = etree.SubElement(suite, "testcase", classname=task.name,
                                    name=result["path"][len(task.name):].lstrip("/") or "(none)")
            _outcome(case, "Completed", result["result"], result["message"])
            etree.SubElement(case, "system-out")
    for name, path in (("tests", "testcase"), ("skipped", "testcase/skipped"), ("failures", "testcase/failure"),
                       ("errors", "testcase/error")):
        suite.set(name, str(len(suite.findall(path))))
    return suite


def _outcome(case, status: str, result: str, message: str) -> None:
    if status == "Cancelled":
        etree.SubElement(case, "skipped", type="skipped", message=message)
    elif status == "Aborted":
        etree.SubElement(case, "error", type="error", message=message)
    elif result in ("Warn", "Fail"):
        etree.SubElement(case, "failure", type="failure", message=message)
