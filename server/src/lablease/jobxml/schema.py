"""JSON Schema (Draft 2020-12) of the job's JSON form as submitted.

Submissions may leave out anything that has a default, write durations as
seconds or text (`4h`, `PT4H`, `1:30:00`), write Beaker's `==` and, in
reservesys, Beaker's `when`. `normalise_job` turns a valid submission into
the complete form described in docs/jobs.md. Built from fields.py, so the
vocabulary lives in one place.
"""
from __future__ import annotations

from ..domain import limits
from ..domain.limits import SPACE
from ..domain.windows import MAX_SECONDS
from ..timeparse import DURATION_PATTERN
from . import fields

# Characters XML 1.0 cannot carry: a job must survive a round trip through XML.
XML_SAFE = r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]*$"
MAX_INT = 2**63 - 1

TEXT = {"type": "string", "pattern": XML_SAFE}
NAME = {"type": "string", "minLength": 1, "pattern": XML_SAFE,
        "not": {"type": "string", "pattern": rf"^[{SPACE}]|[{SPACE}]$"}}
DURATION = {"type": ["integer", "string"], "minimum": 1, "maximum": MAX_SECONDS, "pattern": DURATION_PATTERN}
FLAG = {"type": "boolean"}
# A mail address as a mail server takes it: local@domain, no white space, brackets or separators.
_MAIL_PART = rf"[^@{SPACE}<>(),;:\"\[\]\\\x00-\x1f\x7f-\x9f]+"
MAIL_PATTERN = rf"^{_MAIL_PART}@{_MAIL_PART}$"
MAIL = {"type": "string", "pattern": MAIL_PATTERN, "maxLength": 254}
URL_PATTERN = rf"^[A-Za-z][A-Za-z0-9+.-]*://[^{SPACE}\x00-\x1f\x7f-\x9f]+$"
URL = {**NAME, "pattern": URL_PATTERN}
WORD_PATTERN = rf"^[^{SPACE}\x00-\x1f\x7f-\x9f]+$"
PACKAGE = {**NAME, "pattern": WORD_PATTERN}
# Written inside bootloader --append="...": no double quote.
POST_OPTIONS_PATTERN = XML_SAFE.replace("[^", '[^"', 1)
REPO_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:-]*$"  # also a file name: /etc/yum.repos.d/NAME.repo


def _ops(ops: tuple) -> dict:
    return {"enum": list(ops) + (["=="] if "=" in ops else [])}


DATE = r"^([0-9]{4}-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01]))?$"
_VALUES = {
    "number": {"type": "integer", "minimum": 0, "maximum": MAX_INT},
    "bytes": {"type": "integer", "minimum": 0, "maximum": MAX_INT},
    "real": {"type": "number", "minimum": 0, "maximum": MAX_INT},
    "date": {"type": "string", "pattern": DATE, "description": "YYYY-MM-DD, or \"\" for never"},
    "boolean": {"type": "boolean"},
    "device": {"type": "object", "minProperties": 1, "additionalProperties": False,
               "properties": {key: TEXT for key in fields.DEVICE_KEYS}},
    "key_value": {"type": ["string", "integer"], "pattern": XML_SAFE},
    "text": TEXT,
}


def _leaf(field_kinds: dict) -> dict:
    """A leaf; fields that share operators and value kind share one branch of an if/else chain.

    A chain, not an allOf of one `if` per field: jsonschema then evaluates a
    couple of conditions per leaf, not one per field (big jobs stay fast).
    """
    groups: dict[tuple, list[str]] = {}
    for field, (kind, ops) in field_kinds.items():
        groups.setdefault((ops, kind), []).append(field)
    chain: dict = {}
    for (ops, kind), names in reversed(list(groups.items())):
        rules = {"properties": {"op": _ops(ops), "value": _VALUES[kind]}}
        if kind == "key_value":
            rules["required"] = ["key"]
        else:
            rules["properties"]["key"] = False
        if kind != "bytes":
            rules["properties"]["units"] = False
        if not chain:
            chain = rules
        else:
            chain = {"if": {"properties": {"field": {"enum": names}}, "required": ["field"]}, "then": rules,
                     "else": chain}
    return {
        "type": "object",
        "required": ["field", "value"],
        "properties": {"field": {"enum": list(field_kinds)}, "op": _ops(fields.ALL_OPS), "value": {}, "key": NAME,
                       "units": {"enum": list(fields.BYTE_UNITS)}},
        "additionalProperties": False,
        "allOf": [chain],
    }


def _tree(name: str, leaf: str, disk: bool = False) -> dict:
    """Leaf / and / or / not (/ disk), told apart by their key so errors point at the right place."""
    me = {"$ref": f"#/$defs/{name}"}

    def branch(key: str, schema: dict) -> dict:
        return {"properties": {key: schema}, "additionalProperties": False}

    return {
        "type": "object",
        "if": {"required": ["field"]}, "then": {"$ref": f"#/$defs/{leaf}"},
        "else": {
            "if": {"required": ["and"]}, "then": branch("and", {"type": "array", "items": me}),
            "else": {
                "if": {"required": ["or"]}, "then": branch("or", {"type": "array", "items": me}),
                "else": {
                    "if": {"required": ["not"]}, "then": branch("not", me),
                    "else": {"if": {"required": [fields.DISK]},
                             "then": branch(fields.DISK, {"$ref": "#/$defs/disk_filter"}),
                             "else": {"$ref": f"#/$defs/{leaf}"}} if disk else {"$ref": f"#/$defs/{leaf}"},
                },
            },
        },
    }


def _attributes(*required: str, optional: tuple = ()) -> dict:
    """An element of Beaker's custom <distro>, as its attributes."""
    return {"type": "object", "required": list(required), "additionalProperties": False,
            "properties": {name: TEXT for name in required + optional}}


def _nullable(ref: str) -> dict:
    return {"if": {"type": "null"}, "else": {"$ref": ref}}


RECIPE = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "whiteboard": TEXT,
        "host_requires": _nullable("#/$defs/host_filter"),
        "force": {**NAME, "type": ["string", "null"]},
        "distro_requires": _nullable("#/$defs/distro_filter"),
        "autopick": {
            "type": "object",
            "additionalProperties": False,
            "properties": {"random": FLAG, "pools": {"type": "array", "items": NAME, "uniqueItems": True}},
        },
        "reservesys": _nullable("#/$defs/reservesys"),
        "runtime_limit": {**DURATION, "type": ["integer", "string", "null"]},
        "healthy_within": {**DURATION, "type": ["integer", "string", "null"],
                           "description": "hand over only a system whose health check passed this recently"},
        "ks_meta": TEXT,
        "kernel_options": TEXT,
        "kernel_options_post": {**TEXT, "pattern": POST_OPTIONS_PATTERN},
        "role": {**NAME, "type": ["string", "null"]},
        "watchdog": {"type": ["object", "null"], "additionalProperties": False,
                     "properties": {"panic": {"enum": [*fields.WATCHDOG_PANIC, None]}}},
        "distro": {"type": ["object", "null"], "description": "Beaker's custom distro: kept, not installed",
                   "additionalProperties": False, "properties": {
                       **{name: _attributes("url") for name in ("tree", "kernel", "initrd", "image")},
                       **{name: _attributes("value") for name in ("arch", "name", "variant")},
                       "osversion": _attributes("major", optional=("minor",))}},
        "kickstart": {"type": ["string", "null"], "pattern": XML_SAFE},
        "packages": {"type": "array", "items": PACKAGE},
        "ks_appends": {"type": "array", "items": TEXT},
        "repos": {"type": "array", "items": {
            "type": "object", "required": ["name", "url"], "additionalProperties": False,
            "properties": {"name": {**NAME, "pattern": REPO_NAME_PATTERN}, "url": URL}}},
        "partitions": {"type": "array", "items": {
            "type": "object", "required": ["name", "size"], "additionalProperties": False,
            "properties": {"name": PACKAGE, "size": {"type": "integer", "minimum": 1, "maximum": MAX_INT},
                           "fs": {**PACKAGE, "type": ["string", "null"]},
                           "type": {"enum": [*fields.PARTITION_TYPES, None]}}}},
        "tasks": {"type": "array", "items": {"$ref": "#/$defs/task"}},
    },
}

# A guest recipe (docs/jobs.md, "Guest recipes") holds what a recipe holds, whatever that grows to, and says
# how its host starts it; a recipe lists its guests, a guest has none.
GUEST_RECIPE = {**RECIPE, "properties": {
    **RECIPE["properties"], "guestname": {**NAME, "type": ["string", "null"], "maxLength": 200}, "guestargs": TEXT}}
RECIPE["properties"]["guests"] = {"type": "array", "items": {"$ref": "#/$defs/guest_recipe"}}

JOB_SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "$id": "https://lablease.invalid/schemas/job.json",
    "title": "lablease job",
    "type": "object",
    "required": ["recipe_sets"],
    "additionalProperties": False,
    "properties": {
        "whiteboard": TEXT,
        "group": {**NAME, "type": ["string", "null"]},
        "retention_tag": {**TEXT, "type": ["string", "null"]},  # "" (as Beaker exports write) = none
        "product": {**TEXT, "type": ["string", "null"]},
        "notify": {"type": "object", "additionalProperties": False,
                   "properties": {"cc": {"type": "array", "items": MAIL,
                                         "description": "the same address twice is merged into one"}}},
        "recipe_sets": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/recipe_set"}},
        "extensions": {"type": "array", "items": {"type": "string"},
                       "description": "Beaker's extension elements: each one XML element in a namespace of its "
                                      "own, kept with the job and written back by its export, not acted on"},
    },
    "$defs": {
        "recipe_set": {
            "type": "object",
            "required": ["recipes"],
            "additionalProperties": False,
            "properties": {
                "priority": {"enum": list(fields.PRIORITIES)},
                "ar": {"type": ["integer", "null"], "minimum": 1, "maximum": limits.MAX_INT},  # an id
                "recipes": {"type": "array", "minItems": 1, "items": {"$ref": "#/$defs/recipe"}},
            },
        },
        "recipe": RECIPE,
        "guest_recipe": GUEST_RECIPE,
        "reservesys": {
            "type": "object",
            "additionalProperties": False,
            "not": {"required": ["when"], "anyOf": [{"required": [flag]} for flag in fields.RESERVE_FLAGS]},
            "description": "give either when= or the flags (onabort, onfail, onwarn, onpass), not both",
            "properties": {
                **{flag: FLAG for flag in fields.RESERVE_FLAGS},
                "when": {"enum": list(fields.WHEN)},
                "duration": DURATION,
            },
        },
        "task": {
            "type": "object",
            "anyOf": [{"required": ["name"]}, {"required": ["fetch"]}],
            "description": "a task needs a name or a fetch URL",
            "additionalProperties": False,
            "properties": {
                "name": NAME,
                "fetch": {"type": "object", "required": ["url"], "additionalProperties": False,
                          "properties": {"url": URL, "subdir": TEXT}},
                "role": NAME,
                "params": {"type": "object", "propertyNames": NAME, "additionalProperties": TEXT},
            },
        },
        "host_filter": _tree("host_filter", "host_leaf", disk=True),
        "host_leaf": _leaf(fields.HOST_FIELD_KINDS),
        "disk_filter": _tree("disk_filter", "disk_leaf"),
        "disk_leaf": _leaf(fields.DISK_FIELD_KINDS),
        "distro_filter": _tree("distro_filter", "distro_leaf"),
        "distro_leaf": _leaf({field: ("text", ops) for field, ops in fields.DISTRO_FIELD_OPS.items()}),
    },
}

# The same, with the rule _recipe in normalise.py checks (it names the force field, which a schema
# cannot): the API description's "Job".
_ONE_OF_FORCE_OR_HOST = {
    "not": {"required": ["force", "host_requires"],
            "properties": {"force": {"type": "string"}, "host_requires": {"type": "object"}}},
    "description": "force= names exactly one system; it cannot be combined with host requirements"}
# And _guest's: a guest needs distro requirements (its host installs it from a tree).
_GUEST_DESCRIPTION = {**GUEST_RECIPE, **_ONE_OF_FORCE_OR_HOST, "required": ["distro_requires"],
                      "properties": {**GUEST_RECIPE["properties"],
                                     "distro_requires": {"$ref": "#/$defs/distro_filter"}}}
JOB_DESCRIPTION = {**JOB_SCHEMA, "$defs": {**JOB_SCHEMA["$defs"], "recipe": {**RECIPE, **_ONE_OF_FORCE_OR_HOST},
                                           "guest_recipe": _GUEST_DESCRIPTION}}
