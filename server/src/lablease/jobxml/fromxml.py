"""Job XML (already checked against the grammar) -> the job's JSON input form.

The conversion only maps structure; values that need checking (numbers,
durations, combinations) are left for `normalise_job`, which says what is
wrong by JSON path. `Lines` remembers which element each path came from, so
an XML submitter hears "line 14: <memory> value: ..." instead.
"""
from __future__ import annotations

import re

from . import fields
from .errors import PathError

_WHOLE_NUMBER = re.compile(r"\s*(\d+)\s*")
# Past 19 digits a number is past 2**63 - 1 whatever it says: it becomes one just past that, so the
# schema says it is too large (rather than "not a whole number", or Python converting 4,300 digits).
_TOO_LARGE = 2**63
_TRUE = {"true", "1", "TRUE"}

_REAL = re.compile(r"\s*(\d{1,19}(\.\d{1,9})?)\s*")

DISK = {"leaves": fields.DISK_ELEMENTS, "wrappers": {}}
HOST = {"leaves": fields.HOST_ELEMENTS, "wrappers": fields.HOST_WRAPPERS, fields.DISK: DISK}
DISTRO = {"leaves": fields.DISTRO_ELEMENTS, "wrappers": fields.DISTRO_WRAPPERS}


class Lines:
    """JSON path -> the element it was read from."""

    def __init__(self):
        self.elements: dict[tuple, object] = {}

    def mark(self, path: tuple, element) -> tuple:
        self.elements[path] = element  # the innermost element wins
        return path

    def locate(self, path: tuple):
        """The element for the longest known prefix of `path`, and the rest of the path."""
        for cut in range(len(path), -1, -1):
            if path[:cut] in self.elements:
                return self.elements[path[:cut]], path[cut:]
        return None, path


def job_from_xml(root, lines: Lines) -> dict:
    job = {"recipe_sets": []}
    lines.mark((), root)
    for name in ("group", "retention_tag", "product"):
        _copy(root, job, name)
    for notify in root.iterchildren("notify"):
        lines.mark(("notify",), notify)
        job["notify"] = {"cc": _listed(notify.iterchildren("cc"), ("notify", "cc"), lines, _stripped)}
    for whiteboard in root.iterchildren("whiteboard"):
        job["whiteboard"] = whiteboard.text or ""
        lines.mark(("whiteboard",), whiteboard)
    for i, element in enumerate(root.iterchildren("recipeSet")):
        path = lines.mark(("recipe_sets", i), element)
        recipe_set = {"recipes": []}
        _copy(element, recipe_set, "priority")
        if "ar" in element.attrib:
            recipe_set["ar"] = _number(element.get("ar"))
        for j, recipe in enumerate(element.iterchildren("recipe")):
            recipe_set["recipes"].append(_recipe(recipe, path + ("recipes", j), lines))
        job["recipe_sets"].append(recipe_set)
    return job


def _recipe(element, path: tuple, lines: Lines) -> dict:
    lines.mark(path, element)
    recipe = {}
    for name in ("whiteboard", "ks_meta", "kernel_options", "kernel_options_post", "runtime_limit", "role",
                 "healthy_within"):
        _copy(element, recipe, name)
    _kickstart_parts(element, recipe, path, lines)
    for child in element.iterchildren("autopick"):
        lines.mark(path + ("autopick",), child)
        recipe["autopick"] = {"pools": [(pool.text or "").strip() for pool in child.iterchildren("pool")]}
        if "random" in child.attrib:
            recipe["autopick"]["random"] = child.get("random") in _TRUE
    for child in element.iterchildren("distroRequires"):
        recipe["distro_requires"] = _requires(child, DISTRO, path + ("distro_requires",), lines, empty={"and": []})
    for child in element.iterchildren("hostRequires"):
        lines.mark(path + ("force",), child)
        _copy(child, recipe, "force")
        recipe["host_requires"] = _requires(child, HOST, path + ("host_requires",), lines, empty=None)
    for child in element.iterchildren("reservesys"):
        recipe["reservesys"] = _reservesys(child, lines.mark(path + ("reservesys",), child))
    for child in element.iterchildren("watchdog"):
        lines.mark(path + ("watchdog",), child)
        recipe["watchdog"] = {"panic": child.get("panic")} if "panic" in child.attrib else {}
    for child in element.iterchildren("distro"):
        lines.mark(path + ("distro",), child)
        recipe["distro"] = {part.tag: dict(part.attrib) for part in child}
    recipe["tasks"] = [_task(task, path + ("tasks", k), lines)
                       for k, task in enumerate(element.iterchildren("task"))]
    guests = [_guest(guest, path + ("guests", k), lines)
              for k, guest in enumerate(element.iterchildren("guestrecipe"))]
    if guests:
        recipe["guests"] = guests
    return recipe


def _kickstart_parts(element, recipe: dict, path: tuple, lines: Lines) -> None:
    """<kickstart>, <packages> and <installPackage>, <ks_appends>, <repos>, <partitions>."""
    for child in element.iterchildren("kickstart"):
        lines.mark(path + ("kickstart",), child)
        recipe["kickstart"] = child.text or ""
    packages = [child for packages in element.iterchildren("packages") for child in packages.iterchildren("package")]
    packages += element.iterchildren("installPackage")  # the older spelling of one <package>
    if packages:
        recipe["packages"] = _listed(packages, path + ("packages",), lines, _package_name)
    for appends in element.iterchildren("ks_appends"):
        recipe["ks_appends"] = _listed(appends.iterchildren("ks_append"), path + ("ks_appends",), lines,
                                       lambda child: child.text or "")
    for repos in element.iterchildren("repos"):
        recipe["repos"] = _listed(repos.iterchildren("repo"), path + ("repos",), lines,
                                  lambda child: dict(child.attrib))
    for partitions in element.iterchildren("partitions"):
        recipe["partitions"] = _listed(partitions.iterchildren("partition"), path + ("partitions",), lines,
                                       lambda child: {**child.attrib, "size": _number(child.get("size"))})


def _listed(children, path: tuple, lines: Lines, read) -> list:
    """read(child) for each child, each marked as path + (its index,)."""
    values = []
    for k, child in enumerate(children):
        lines.mark(path + (k,), child)
        values.append(read(child))
    return values


def _stripped(element) -> str:
    return (element.text or "").strip()


def _package_name(element) -> str:
    return element.get("name") if element.tag == "package" else _stripped(element)


def _guest(element, path: tuple, lines: Lines) -> dict:
    """A <guestrecipe>: a recipe's contents (the grammar allows no guest inside it), and how to start it."""
    guest = _recipe(element, path, lines)
    for name in ("guestname", "guestargs"):
        _copy(element, guest, name)
    if guest.get("guestname") == "":  # how Beaker exports a guest without a name
        del guest["guestname"]
    return guest


def _reservesys(element, path: tuple) -> dict:
    reservesys = {}
    _copy(element, reservesys, "when")
    _copy(element, reservesys, "duration")
    for flag in fields.RESERVE_FLAGS:
        if flag in element.attrib:
            reservesys[flag] = element.get(flag) in _TRUE
    return reservesys


def _task(element, path: tuple, lines: Lines) -> dict:
    lines.mark(path, element)
    task = {"params": {}}
    _copy(element, task, "name")
    _copy(element, task, "role")
    for fetch in element.iterchildren("fetch"):
        task["fetch"] = dict(fetch.attrib)
        lines.mark(path + ("fetch",), fetch)
    for params in element.iterchildren("params"):
        for param in params.iterchildren("param"):
            name = param.get("name")
            lines.mark(path + ("params", name), param)
            if name in task["params"]:
                raise PathError(path + ("params", name), f"parameter {name!r} is given twice")
            task["params"][name] = param.get("value")
    return task


def _requires(container, context: dict, path: tuple, lines: Lines, empty):
    """A container (<hostRequires>, <system>...): no child = `empty`, one = it, more = and."""
    lines.mark(path, container)
    children = list(container)
    if not children:
        return empty
    if len(children) == 1:
        return _filter(children[0], context, path, lines)
    return {"and": [_filter(child, context, path + ("and", k), lines) for k, child in enumerate(children)]}


def _filter(element, context: dict, path: tuple, lines: Lines) -> dict:
    lines.mark(path, element)
    tag = element.tag
    if tag in ("and", "or"):
        return {tag: [_filter(child, context, path + (tag, k), lines) for k, child in enumerate(element)]}
    if tag == "not":
        if len(element) == 0:
            raise PathError(path, "<not> needs a filter inside it")
        return {"not": _requires(element, context, path + ("not",), lines, empty=None)}
    if tag in context["wrappers"]:
        inner = {"leaves": context["wrappers"][tag], "wrappers": {}}
        return _requires(element, inner, path, lines, empty={"and": []})
    if tag == fields.DISK and fields.DISK in context:  # one of the system's disks matches the whole subtree
        return {fields.DISK: _requires(element, context[fields.DISK], path + (fields.DISK,), lines,
                                       empty={"and": []})}
    field = context["leaves"].get(tag)
    if field is None:  # the grammar and fields.py disagree: a bug, but say so plainly
        raise PathError(path, f"<{tag}> is not a known filter here")
    leaf = {"field": field, "op": element.get("op", "=")}
    if field == "device":
        leaf["value"] = {key: element.get(key) for key in fields.DEVICE_KEYS if key in element.attrib}
    else:
        leaf["value"] = _value(fields.VALUE_KINDS.get(field, "text"), element.get("value"))
    if field == "key_value":
        leaf["key"] = element.get("key")
    _copy(element, leaf, "units")
    return leaf


def _value(kind: str, text: str):
    """The value as its kind wants it; text that does not fit is left as it is, for the schema to refuse."""
    if kind in ("number", "bytes"):
        return _number(text)
    if kind == "real":
        match = _REAL.fullmatch(text) if isinstance(text, str) else None
        return (float(match[1]) if match[2] else int(match[1])) if match else text
    if kind == "boolean":
        word = text.strip().lower() if isinstance(text, str) else text
        return True if word in ("true", "1") else False if word in ("false", "0") else text
    return text


def _number(text: str):
    match = _WHOLE_NUMBER.fullmatch(text) if isinstance(text, str) else None
    if not match:
        return text
    digits = match[1].lstrip("0") or "0"
    return int(digits) if len(digits) <= 19 else _TOO_LARGE


def _copy(element, into: dict, name: str) -> None:
    if name in element.attrib:
        into[name] = element.get(name)
