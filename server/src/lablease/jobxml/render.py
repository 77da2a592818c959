"""render_job_xml: a job's JSON form -> job XML that parse_job_xml reads back unchanged.

Filter leaves are written generically: the field's element (fields.ELEMENT_FOR_FIELD,
else the field's own name) with every other key of the leaf as an attribute, so a
filter added to the grammar round-trips once its element is named there. A leaf
written otherwise (inside a wrapper, or holding a tree of its own) registers its
writer in LEAF_WRITERS: `writer(parent_element, leaf)`, which may call write_filter.
"""
from __future__ import annotations

from lxml import etree

from . import fields
from .extensions import element_of
from .normalise import normalise_job


def render_job_xml(job: dict) -> bytes:
    job = normalise_job(job)
    root = etree.Element("job")
    for name in ("group", "retention_tag", "product"):
        if job.get(name) is not None:
            root.set(name, job[name])
    if job["notify"]["cc"]:
        notify = etree.SubElement(root, "notify")
        for address in job["notify"]["cc"]:
            etree.SubElement(notify, "cc").text = address
    if job["whiteboard"]:
        etree.SubElement(root, "whiteboard").text = job["whiteboard"]
    for recipe_set in job["recipe_sets"]:
        element = etree.SubElement(root, "recipeSet", priority=recipe_set["priority"])
        if recipe_set["ar"] is not None:
            element.set("ar", str(recipe_set["ar"]))
        for recipe in recipe_set["recipes"]:
            _recipe(etree.SubElement(element, "recipe"), recipe)
    etree.indent(root)
    # after indenting: an extension is written back exactly as it came (indenting would add text to it)
    at = len(root.findall("notify")) + len(root.findall("whiteboard"))
    for k, text in enumerate(job.get("extensions", ())):
        extension = element_of(text)
        extension.tail = "\n  "
        root.insert(at + k, extension)
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8") + b"\n"


def recipe_element(tag: str, recipe: dict):
    """One normalised recipe (a `guestrecipe` too) as its element, as it is written in a job."""
    element = etree.Element(tag)
    if tag == "guestrecipe":
        _guest(element, recipe)
    else:
        _recipe(element, recipe)
    return element


def _recipe(element, recipe: dict) -> None:
    for name in ("whiteboard", "ks_meta", "kernel_options", "kernel_options_post", "role"):
        if recipe[name]:
            element.set(name, recipe[name])
    if recipe["runtime_limit"] is not None:
        element.set("runtime_limit", str(recipe["runtime_limit"]))
    if recipe.get("healthy_within") is not None:
        element.set("healthy_within", str(recipe["healthy_within"]))
    autopick = recipe["autopick"]
    if autopick["random"] or autopick["pools"]:
        picks = etree.SubElement(element, "autopick", random="true" if autopick["random"] else "false")
        for pool in autopick["pools"]:
            etree.SubElement(picks, "pool").text = pool
    if recipe["distro_requires"] is not None:
        _filter(etree.SubElement(element, "distroRequires"), recipe["distro_requires"])
    if recipe["distro"] is not None:
        distro = etree.SubElement(element, "distro")
        for part, attributes in recipe["distro"].items():
            etree.SubElement(distro, part, attributes)
    if recipe["force"] is not None:
        etree.SubElement(element, "hostRequires", force=recipe["force"])
    elif recipe["host_requires"] is not None:
        _filter(etree.SubElement(element, "hostRequires"), recipe["host_requires"])
    if recipe["reservesys"] is not None:
        reservesys = etree.SubElement(element, "reservesys")
        for flag in fields.RESERVE_FLAGS:
            reservesys.set(flag, "true" if recipe["reservesys"][flag] else "false")
        reservesys.set("duration", str(recipe["reservesys"]["duration"]))
    if recipe["watchdog"] is not None:
        watchdog = etree.SubElement(element, "watchdog")
        if recipe["watchdog"]["panic"] is not None:
            watchdog.set("panic", recipe["watchdog"]["panic"])
    _kickstart_parts(element, recipe)
    for task in recipe["tasks"]:
        _task(etree.SubElement(element, "task", name=task["name"], role=task["role"]), task)
    for guest in recipe.get("guests", ()):
        _guest(etree.SubElement(element, "guestrecipe"), guest)


def _guest(element, guest: dict) -> None:
    if guest["guestname"] is not None:
        element.set("guestname", guest["guestname"])
    if guest["guestargs"]:
        element.set("guestargs", guest["guestargs"])
    _recipe(element, guest)


def _kickstart_parts(element, recipe: dict) -> None:
    if recipe["kickstart"] is not None:
        etree.SubElement(element, "kickstart").text = recipe["kickstart"]
    if recipe["packages"]:
        packages = etree.SubElement(element, "packages")
        for name in recipe["packages"]:
            etree.SubElement(packages, "package", name=name)
    if recipe["ks_appends"]:
        appends = etree.SubElement(element, "ks_appends")
        for text in recipe["ks_appends"]:
            etree.SubElement(appends, "ks_append").text = text
    if recipe["repos"]:
        repos = etree.SubElement(element, "repos")
        for repo in recipe["repos"]:
            etree.SubElement(repos, "repo", name=repo["name"], url=repo["url"])
    if recipe["partitions"]:
        partitions = etree.SubElement(element, "partitions")
        for partition in recipe["partitions"]:
            etree.SubElement(partitions, "partition", {key: str(value) for key, value in partition.items()
                                                       if value is not None})


def _task(element, task: dict) -> None:
    if "fetch" in task:
        etree.SubElement(element, "fetch", {key: value for key, value in task["fetch"].items() if value})
    if task["params"]:
        params = etree.SubElement(element, "params")
        for name, value in task["params"].items():
            etree.SubElement(params, "param", name=name, value=value)


LEAF_WRITERS: dict = {}  # field -> writer(parent_element, leaf), for leaves not written generically


def write_filter(parent, tree: dict) -> None:
    """A filter tree (and/or/not and leaves) as children of `parent`."""
    _filter(parent, tree)


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
    if leaf["field"] in LEAF_WRITERS:
        LEAF_WRITERS[leaf["field"]](into, leaf)
        return
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
