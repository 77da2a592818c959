"""Turning request bodies and query strings into checked Python values."""
from __future__ import annotations

import difflib
import json

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match
from werkzeug.exceptions import BadRequest, UnsupportedMediaType

from ..domain.errors import Invalid, UnknownField
from ..domain.numbers import check_whole
from ..timeparse import parse_duration, parse_time


def read_json(request, data: bytes) -> object:
    """The JSON body (already read, bounded), or 400/415 with a clear reason."""
    if not data.strip():
        return {}
    if request is not None and request.mimetype not in ("application/json", "") and not request.mimetype.endswith("+json"):
        raise UnsupportedMediaType(f"send the body as application/json, not {request.mimetype}")
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as error:
        raise BadRequest(f"the body is not valid JSON: {error}") from None


_VALIDATORS: dict[int, Draft202012Validator] = {}


def _validator(schema: dict) -> Draft202012Validator:
    """Validators are built once per schema (the route table's schemas live as long as the process)."""
    validator = _VALIDATORS.get(id(schema))
    if validator is None:
        validator = _VALIDATORS[id(schema)] = Draft202012Validator(schema)
    return validator


def check_body(body: object, schema: dict) -> None:
    """422 naming the field at fault when body does not match schema.

    An unknown field comes first: it is most often a misspelt one (`sytem`), which would
    otherwise be reported as the required field it was meant to be.
    """
    found = list(_validator(schema).iter_errors(body))
    error = next((e for e in found if e.validator == "additionalProperties"), None) or best_match(found)
    if error is None:
        return
    path = ".".join(str(p) for p in error.absolute_path)
    if error.validator == "required":
        missing = next((name for name in error.validator_value if name not in error.instance), "?")
        raise Invalid(f"{path}.{missing}" if path else missing, "is required")
    if error.validator == "additionalProperties":
        known = error.schema.get("properties", {})
        name = min(set(error.instance) - set(known), default="?")
        close = difflib.get_close_matches(name, known, n=1)
        raise UnknownField(*(f"{path}.{n}" if path else n for n in (name, *close)))
    if error.validator == "maximum":  # the value may be hundreds of digits long: not repeated
        raise Invalid(path or "body", f"is too large (at most {error.validator_value})")
    raise Invalid(path or "body", error.message)


def merge_force(query: dict, body: dict) -> bool:
    """`force` from the query string or the JSON body, which routes taking it accept alike.

    It moves into the query, where views read it, so the body keeps only the resource's own fields.
    """
    if isinstance(body, dict) and "force" in body:
        forced = body.pop("force")
        if query.get("force", forced) != forced:
            raise Invalid("force", "the query string and the body disagree; give it once")
        query["force"] = forced
    return bool(query.get("force"))


def query_value(kind: str, name: str, raw: str):
    if kind == "time":
        return parse_time(raw, name)
    if kind == "bool":
        if raw.lower() in ("1", "true", "yes"):
            return True
        if raw.lower() in ("0", "false", "no"):
            return False
        raise Invalid(name, "must be true or false")
    if kind == "int":
        try:
            number = int(raw)
        except ValueError:
            raise Invalid(name, "must be a whole number") from None
        return check_whole(name, number, minimum=0)
    return raw


def time_field(body: dict, name: str):
    return parse_time(body[name], name) if body.get(name) is not None else None


def duration_field(body: dict, name: str, allow_unlimited: bool = False):
    return parse_duration(body[name], name, allow_unlimited) if body.get(name) is not None else None
