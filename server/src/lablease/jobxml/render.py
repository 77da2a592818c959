"""render_job_xml: a job's JSON form -> job XML that parse_job_xml reads back unchanged."""
from __future__ import annotations

from lxml import etree

from . import fields
from .normalise import normalise_job


def render_job_xml(job: dict) -> bytes:
    job = normalise_job(job)
    root = etree.Element("job")
    if job["group"] is not None:
        root.set("group", job["group"])
    if job["whiteboard"]:
        etree.SubElement(root, "whiteboard").text = job["whiteboard"]
    for recipe_set in job["recipe_sets"]:
        element = etree.SubElement(root, "recipeSet", priority=recipe_set["priority"])
        if recipe_set["ar"] is not None:
            element.set("ar", str(recipe_set["ar"]))
        for recipe in recipe_set["recipes"]:
            _recipe(etree.SubElement(element, "recipe"), recipe)
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True)


def _recipe(element, recipe: dict) -> None:
    for name in ("whiteboard", "ks_meta", "kernel_options"):
        if recipe[name]:
            element.set(name, recipe[name])
    if recipe["runtime_limit"] is not None:
        element.set("runtime_limit", str(recipe["runtime_limit"]))
    autopick = recipe["autopick"]
    if autopick["random"] or autopick["pools"]:
        picks = etree.SubElement(element, "autopick", random="true" if autopick["random"] else "false")
        for pool in autopick["pools"]:
            etree.SubElement(picks, "pool").text = pool
    if recipe["distro_requires"] is not None:
        _filter(etree.SubElement(element, "distroRequires"), recipe["distro_requires"])
    if recipe["force"] is not None:
        etree.SubElement(element, "hostRequires", force=recipe["force"])
    elif recipe["host_requires"] is not None:
        _filter(etree.SubElement(element, "hostRequires"), recipe["host_requires"])
    if recipe["reservesys"] is not None:
        reservesys = etree.SubElement(element, "reservesys")
        for flag in fields.RESERVE_FLAGS:
            reservesys.set(flag, "true" if recipe["reservesys"][flag] else "false")
        reservesys.set("duration", str(recipe["reservesys"]["duration"]))
    for task in recipe["tasks"]:
        _task(etree.SubElement(element, "task", name=task["name"], role=task["role"]), task)


def _task(element, task: dict) -> None:
    if task["params"]:
        params = etree.SubElement(element, "params")
        for name, value in task["params"].items():
            etree.SubElement(params, "param", name=name, value=value)


def _filter(parent, tree: dict) -> None:
    stack = [(parent, tree)]
    while stack:
        into, node = stack.pop()
        for branch in ("and", "or"):
            if branch in node:
                element = etree.SubElement(into, branch)
                stack.extend((element, child) for child in reversed(node[branch]))
                break
        else:
            if "not" in node or fields.DISK in node:
                key = "not" if "not" in node else fields.DISK
                stack.append((etree.SubElement(into, key), node[key]))
            else:
                _leaf(into, node)


def _leaf(into, leaf: dict) -> None:
    wrapper, name = fields.ELEMENT_FOR_FIELD[leaf["field"]]
    element = etree.SubElement(etree.SubElement(into, wrapper) if wrapper else into, name)
    if leaf["field"] == "key_value":
        element.set("key", leaf["key"])
    element.set("op", leaf["op"])
    if leaf["field"] == "device":
        for key, value in leaf["value"].items():
            element.set(key, value)
    elif isinstance(leaf["value"], bool):
        element.set("value", "true" if leaf["value"] else "false")
    else:
        element.set("value", str(leaf["value"]))
