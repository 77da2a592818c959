"""The job's JSON form: validate a submission, fill defaults, list what it names.

`normalise_job` is where XML and JSON submissions meet: both come out as the
same complete dict (docs/jobs.md, "The JSON form"). It knows nothing of the
database; `referenced_names` lists the pools, attribute keys, systems and
distro filters that a service must check exist.
"""
from __future__ import annotations

import json
from functools import cache

import jsonschema_rs
from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from ..domain.boot_text import check_options
from ..domain.errors import Invalid, OutOfRange
from ..domain.filter_trees import leaves
from ..timeparse import DURATION_PATTERN, parse_duration
from . import extensions, fields
from .errors import PathError
from ..domain.windows import MAX_SECONDS
from .schema import (DATE, JOB_SCHEMA, MAIL_PATTERN, POST_OPTIONS_PATTERN, REPO_NAME_PATTERN, URL_PATTERN,
                     WORD_PATTERN)
from .safexml import MAX_DEPTH, MAX_ELEMENTS

# Each XML level is at most two JSON levels (an object and its list). Filter
# nesting is capped apart: jsonschema spends ~13 stack frames per level, and
# 32 levels (~420 frames) leave room under Python's 1000 for the caller.
MAX_JSON_DEPTH = 2 * MAX_DEPTH + 8
MAX_FILTER_DEPTH = 32
MAX_JSON_NODES = 5 * MAX_ELEMENTS


def normalise_job(data) -> dict:
    """The complete JSON form of a job, or Invalid naming the JSON path at fault."""
    try:
        return normalise(data)
    except PathError as error:
        raise Invalid(error.field, error.reason) from None


def normalise(data) -> dict:
    """As normalise_job, raising PathError (the XML front end turns paths into lines)."""
    _check_job_size(data)
    error = None if _quickly_valid(data) else _most_telling(list(_validator().iter_errors(data)))
    if error is not None:
        raise PathError(tuple(error.absolute_path), _message(error))
    return complete(data)


def complete(data: dict) -> dict:
    """A job's complete JSON form without checking it against the schema: for a document lablease checked when
    it was submitted and stored (a stored job's `document`; one stored by an older release may lack keys added
    since, which this fills). Checking it again on every read cost a 100-recipe job's results XML most of its
    time."""
    return {
        "whiteboard": data.get("whiteboard", "").strip(),
        "group": data.get("group"),
        "retention_tag": (data.get("retention_tag") or "").strip() or None,
        "product": (data.get("product") or "").strip() or None,
        # the same address twice is one copy of the mail (Beaker merges them too)
        "notify": {"cc": list(dict.fromkeys(data.get("notify", {}).get("cc", [])))},
        "recipe_sets": [_recipe_set(rs, ("recipe_sets", i)) for i, rs in enumerate(data["recipe_sets"])],
        # only when there are some: the JSON form of every other job stays as it was
        **({"extensions": _extensions(data["extensions"])} if data.get("extensions") else {}),
    }


def _extensions(texts: list) -> list[str]:
    found = []
    for k, text in enumerate(texts):
        try:
            found.append(extensions.normalised(text))
        except ValueError as error:
            raise PathError(("extensions", k), str(error)) from None
    return found


def _recipe_set(data: dict, path: tuple) -> dict:
    return {
        "priority": data.get("priority", "Normal"),
        "ar": data.get("ar"),
        "recipes": [_host_recipe(r, path + ("recipes", j)) for j, r in enumerate(data["recipes"])],
    }


def _host_recipe(data: dict, path: tuple) -> dict:
    """A recipe, and its guest recipes when it has any (no "guests" key otherwise)."""
    recipe = _recipe(data, path)
    if data.get("guests"):
        recipe["guests"] = [_guest(guest, path + ("guests", k)) for k, guest in enumerate(data["guests"])]
    return recipe


def _guest(data: dict, path: tuple) -> dict:
    if data.get("distro_requires") is None:  # its host installs it from a tree: it needs one
        raise PathError(path + ("distro_requires",), "a guest recipe needs distro requirements (distroRequires):"
                                                     " its host installs it from a distro tree")
    # no guestargs= is none (optional to Beaker's server): the host starts the guest with its defaults
    return {**_recipe(data, path), "guestname": data.get("guestname"), "guestargs": data.get("guestargs", "")}


def all_recipes(job: dict):
    """Every recipe of a normalised job, each host followed by its guests."""
    for recipe_set in job["recipe_sets"]:
        for recipe in recipe_set["recipes"]:
            yield recipe
            yield from recipe.get("guests", ())


def _recipe(data: dict, path: tuple) -> dict:
    if data.get("force") is not None and data.get("host_requires") is not None:
        raise PathError(path + ("force",), "force= names exactly one system; it cannot be combined with host requirements")
    autopick = data.get("autopick", {})
    runtime_limit = data.get("runtime_limit")
    for key, what in (("ks_meta", "ks_meta"), ("kernel_options", "kernel options"),
                      ("kernel_options_post", "kernel options")):
        try:  # they reach the netboot file and the kickstart: the writers' rule, checked at submission
            check_options(data.get(key), what)
        except ValueError as error:
            raise PathError(path + (key,), str(error)) from None
    return {
        "whiteboard": data.get("whiteboard", "").strip(),
        "host_requires": _filter(data.get("host_requires")),
        "force": data.get("force"),
        "distro_requires": _filter(data.get("distro_requires")),
        "autopick": {"random": autopick.get("random", False), "pools": list(autopick.get("pools", []))},
        "reservesys": _reservesys(data.get("reservesys"), path + ("reservesys",)),
        "runtime_limit": None if runtime_limit is None else _seconds(runtime_limit, path + ("runtime_limit",)),
        "ks_meta": data.get("ks_meta", "").strip(),
        "kernel_options": data.get("kernel_options", "").strip(),
        "kernel_options_post": data.get("kernel_options_post", "").strip(),
        "role": data.get("role"),
        "watchdog": None if data.get("watchdog") is None else {"panic": data["watchdog"].get("panic")},
        "distro": _copied(data.get("distro")),
        "kickstart": data.get("kickstart"),
        "packages": list(data.get("packages", [])),
        "ks_appends": list(data.get("ks_appends", [])),
        "repos": [dict(repo) for repo in data.get("repos", [])],
        "partitions": [{"fs": None, "type": None, **partition} for partition in data.get("partitions", [])],
        "tasks": [_task(task) for task in data.get("tasks", [])],
        # only when asked for: the JSON form of every other job stays as it was
        **({"healthy_within": _seconds(data["healthy_within"], path + ("healthy_within",))}
           if data.get("healthy_within") is not None else {}),
    }


def _task(data: dict) -> dict:
    task = {"name": data.get("name") or _fetched_name(data["fetch"]), "role": data.get("role", fields.DEFAULT_ROLE),
            "params": dict(data.get("params", {}))}
    if "fetch" in data:
        task["fetch"] = {"url": data["fetch"]["url"], "subdir": data["fetch"].get("subdir", "")}
    return task


def _fetched_name(fetch: dict) -> str:
    """Beaker's default name for a fetched task: the URL, with the subdirectory after a #."""
    subdir = fetch.get("subdir", "")
    return f"{fetch['url']}#{subdir}" if subdir else fetch["url"]


def _copied(distro: dict | None) -> dict | None:
    return None if distro is None else {part: dict(attributes) for part, attributes in distro.items()}


def _reservesys(data: dict | None, path: tuple) -> dict | None:
    if data is None:
        return None
    if "when" in data:  # not with the flags too (the schema's rule)
        values = dict(zip(fields.RESERVE_FLAGS, fields.WHEN[data["when"]]))
    else:
        values = {flag: data.get(flag, True) for flag in fields.RESERVE_FLAGS}
    duration = data.get("duration", fields.DEFAULT_RESERVE_SECONDS)
    return {**values, "duration": _seconds(duration, path + ("duration",))}


def _filter(tree: dict | None) -> dict | None:
    """Defaults filled, == spelt =, key_value values as text. Iterative: trees may be deep."""
    if tree is None:
        return None
    result: dict = {}
    stack = [(tree, result)]
    while stack:
        node, out = stack.pop()
        if "and" in node or "or" in node:
            key = "and" if "and" in node else "or"
            out[key] = [{} for _ in node[key]]
            stack.extend(zip(node[key], out[key]))
        elif "not" in node or fields.DISK in node:
            key = "not" if "not" in node else fields.DISK
            out[key] = {}
            stack.append((node[key], out[key]))
        else:
            op = node.get("op", "=")
            out.update(field=node["field"], op=fields.OP_ALIASES.get(op, op), value=node["value"])
            if node["field"] == "key_value":
                out["key"], out["value"] = node["key"], str(node["value"])
            elif "units" in node:  # sizes are kept in bytes
                out["value"] = node["value"] * fields.BYTE_UNITS[node["units"]]
            elif node["field"] == "device":
                out["value"] = dict(node["value"])
    return result


def _duration_reason(value) -> str:
    """What parse_duration says is wrong with a duration outside DURATION_PATTERN."""
    try:
        parse_duration(value, "duration")
    except Invalid as error:
        return error.extra["reason"]
    return f"{value!r} is not a duration"


def _seconds(value, path: tuple) -> int:
    try:
        seconds = int(parse_duration(value, "duration").total_seconds())
    except OutOfRange:
        seconds = MAX_SECONDS + 1
    except Invalid as error:
        raise PathError(path, error.extra["reason"]) from None
    if not 1 <= seconds <= MAX_SECONDS:
        raise PathError(path, f"{value!r} is out of range (1 second to {MAX_SECONDS} seconds)")
    return seconds


def normalise_host_filter(tree, field: str) -> dict | None:
    """A hostRequires filter in the job JSON form, on its own (an advance reservation's `requires`):
    checked by the job's own grammar and normalised, or Invalid naming the path under `field`."""
    if tree is None:
        return None
    try:
        _check_size(tree, (field,))
        error = _most_telling(list(_host_filter_validator().iter_errors(tree)))
        if error is not None:
            raise PathError((field, *error.absolute_path), _message(error))
    except PathError as error:
        raise Invalid(error.field, error.reason) from None
    return _filter(tree)


@cache
def _host_filter_validator() -> Draft202012Validator:
    return Draft202012Validator({"$defs": JOB_SCHEMA["$defs"], "$ref": "#/$defs/host_filter"})


def _check_job_size(data) -> None:
    if not isinstance(data, dict):
        raise PathError((), "must be a JSON object with recipe_sets")
    _check_size(data, ())


def _check_size(data, root: tuple) -> None:
    """Depth and size before jsonschema, which recurses and would overflow the stack."""
    count, stack = 0, [(data, root, 1, 0)]
    while stack:
        node, path, depth, filters = stack.pop()
        count += 1
        if depth > MAX_JSON_DEPTH or filters > MAX_FILTER_DEPTH:
            raise PathError(path[:6], f"too deeply nested (at most {MAX_FILTER_DEPTH} levels of and/or/not,"
                                      f" {MAX_JSON_DEPTH} levels in all)")
        if count > MAX_JSON_NODES:
            raise PathError((), f"too large (at most {MAX_JSON_NODES} values)")
        items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
        stack.extend((child, path + (key,), depth + 1, filters + (key in fields.BRANCHES or key == fields.DISK)) for key, child in items)


@cache
def _validator() -> Draft202012Validator:
    return Draft202012Validator(JOB_SCHEMA)


SURROGATES = r"\ud800-\udfff"


@cache
def _compiled():
    """JOB_SCHEMA compiled, its patterns without the surrogate range Rust's regexes cannot hold: a string with
    a lone surrogate cannot reach the compiled validator at all (it raises, and jsonschema decides)."""
    schema = json.loads(json.dumps(JOB_SCHEMA), object_hook=lambda node: {
        key: value.replace(SURROGATES, "") if key == "pattern" and isinstance(value, str) else value
        for key, value in node.items()})
    return jsonschema_rs.Draft202012Validator(schema, validate_formats=False)


def _quickly_valid(data) -> bool:
    """True when the compiled (Rust) validator finds the job valid, as api/inputs.py checks request bodies:
    most jobs are, and skip jsonschema's walk (most of a 100-recipe submission's time). Anything else goes to
    jsonschema, whose errors word the refusal (tests/server/unit/test_body_validators.py keeps them agreeing)."""
    try:
        return _compiled().is_valid(data)
    except (ValueError, OverflowError, TypeError):
        return False


def _most_telling(errors: list):
    """A wrong filter field explains the rest (its value then fails too): say that first."""
    on_field = [error for error in errors if list(error.absolute_path)[-1:] == ["field"]]
    return best_match(on_field or errors)


_PATTERN_REASONS = {
    MAIL_PATTERN: "is not a mail address (name@domain, without spaces, brackets or separators)",
    URL_PATTERN: "is not a URL (scheme://..., without spaces)",
    WORD_PATTERN: "must be one word (no spaces or control characters)",
    POST_OPTIONS_PATTERN: "may not contain a double quote or a control character (it is written inside "
                          'bootloader --append="...")',
    REPO_NAME_PATTERN: "is not a repository name (letters, digits and . _ : -, starting with a letter or digit)",
}


def _message(error) -> str:
    value = error.instance
    if error.validator == "type" and "integer" in error.validator_value and "string" not in error.validator_value:
        return f"{value!r} is not a whole number"
    if error.validator == "enum":
        return f"{value!r} is not one of: {', '.join(map(str, error.validator_value))}"
    if error.validator == "pattern" and error.validator_value == DURATION_PATTERN:
        return _duration_reason(value)
    if error.validator == "pattern" and error.validator_value in _PATTERN_REASONS:
        return f"{value!r} {_PATTERN_REASONS[error.validator_value]}"
    if error.validator == "pattern" and error.validator_value == DATE:
        return f"{value!r} is not a date (YYYY-MM-DD, or \"\" for never)"
    if error.validator == "pattern":
        return "contains a control character, which XML cannot carry"
    if error.validator == "maximum":  # the value itself may be thousands of digits long: not repeated
        return f"is too large (at most {error.validator_value})"
    if error.validator == "minimum":
        return f"{value!r} is too small (at least {error.validator_value})"
    if error.validator == "minProperties":  # <device> with none of its attributes
        return "needs at least one of: " + ", ".join(fields.DEVICE_KEYS)
    if error.validator == "minItems":
        return "needs at least one item"
    if error.validator in ("not", "anyOf") and "description" in error.schema:  # a rule that says itself (reservesys)
        return error.schema["description"]
    if error.validator == "not":  # names
        return f"{value!r} must not begin or end with white space"
    if error.validator == "minLength":
        return "must not be empty"
    if error.validator == "uniqueItems":
        return "lists the same name twice"
    if error.schema is False:  # the one false schema: "key" outside key_value
        return "key is only allowed when field is key_value"
    return error.message


def referenced_names(job: dict) -> dict:
    """What a normalised job names, for the service to check against the database.

    pools: pool names in host filters (not the "" of "in no/any pool") and in
    autopick; attribute_keys: keys of key_value filters; distros: the distinct
    distro filter trees; systems: the fqdns given as force=; arches: the
    arches host filters name with = or != (like patterns name none).
    """
    pools, keys, systems, distros, arches = set(), set(), set(), [], set()
    for recipe in all_recipes(job):
        pools.update(recipe["autopick"]["pools"])
        if recipe["force"] is not None:
            systems.add(recipe["force"])
        for leaf in leaves(recipe["host_requires"]):
            if leaf["field"] == "pool" and leaf["value"] != "":
                pools.add(leaf["value"])
            elif leaf["field"] == "key_value":
                keys.add(leaf["key"])
        arches |= filter_arches(recipe["host_requires"])
        if recipe["distro_requires"] is not None and recipe["distro_requires"] not in distros:
            distros.append(recipe["distro_requires"])
    return {"pools": pools, "attribute_keys": keys, "distros": distros, "systems": systems, "arches": arches}


def filter_arches(tree: dict | None) -> set[str]:
    """The arches a normalised host filter names with = or != (a job's, or an advance reservation's)."""
    return {leaf["value"] for leaf in leaves(tree) if leaf["field"] == "arch" and leaf["op"] in ("=", "!=")}
