"""Turning request bodies and query strings into checked Python values."""
from __future__ import annotations

import json
import re

from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import best_match
from werkzeug.exceptions import BadRequest, UnsupportedMediaType

from ..domain.errors import Invalid
from ..timeparse import parse_duration, parse_time
from .schemas import QUERY_KINDS


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
# Formats checked with the schema; times are read by parse_time, which says what is wrong with them.
_FORMATS = FormatChecker(formats=("email",))


def _validator(schema: dict) -> Draft202012Validator:
    """Validators are built once per schema (the route table's schemas live as long as the process)."""
    validator = _VALIDATORS.get(id(schema))
    if validator is None:
        validator = _VALIDATORS[id(schema)] = Draft202012Validator(schema, format_checker=_FORMATS)
    return validator


def check_body(body: object, schema: dict) -> object:
    """The body, or 422 naming the field at fault when it does not match schema.

    A whole number written as 2.0 is an integer to JSON Schema: it comes back as the int 2."""
    error = best_match(_validator(schema).iter_errors(body))
    if error is None:
        return whole_numbers(body, schema)
    path = ".".join(str(p) for p in error.absolute_path)
    if error.validator == "required":
        missing = next((name for name in error.validator_value if name not in error.instance), "?")
        raise Invalid(f"{path}.{missing}" if path else missing, "is required")
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})))
        name = extra[0] if extra else "?"
        raise Invalid(f"{path}.{name}" if path else name, "is not a known field")
    name = _rule_field(error)
    if name:
        raise Invalid(f"{path}.{name}" if path else name, error.schema["description"])
    if error.validator == "pattern" and "description" in error.schema:
        raise Invalid(path or "body", f"{error.instance!r} is not {error.schema['description']}")
    raise Invalid(path or "body", error.message)


def whole_numbers(value: object, schema: dict) -> object:
    """value with the floats that schema's integer fields hold (2.0) as ints."""
    if isinstance(value, float) and "integer" in _types(schema) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        properties = schema.get("properties", {})
        return {key: whole_numbers(item, properties.get(key, {})) for key, item in value.items()}
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [whole_numbers(item, schema["items"]) for item in value]
    return value


def _types(schema: dict) -> list:
    kind = schema.get("type", [])
    return kind if isinstance(kind, list) else [kind]


def _rule_field(error) -> str | None:
    """The first field a broken schemas.rule names (a oneOf, anyOf or not of `required`s), else None."""
    if error.validator not in ("oneOf", "anyOf", "not") or "description" not in error.schema:
        return None
    alternatives = error.validator_value if error.validator != "not" else [error.validator_value]
    if not all(isinstance(a, dict) and a.get("required") for a in alternatives):
        return None
    return alternatives[0]["required"][0]


def query_value(kind: str, name: str, raw: str):
    """A query parameter's value by its kind (schemas.QUERY_KINDS describes them)."""
    if kind == "time":
        return parse_time(raw, name)
    if kind == "bool":
        if raw.lower() in ("1", "true", "yes"):
            return True
        if raw.lower() in ("0", "false", "no"):
            return False
        raise Invalid(name, "must be true or false")
    if kind == "int":
        bounds = QUERY_KINDS["int"]
        # ASCII digits only (int() also takes "+5", " 5", "1_000" and other scripts' digits), and few of them
        digits = len(str(bounds["maximum"]))
        if not (re.fullmatch(f"[0-9]{{1,{digits}}}", raw) and bounds["minimum"] <= int(raw) <= bounds["maximum"]):
            raise Invalid(name, f"must be a whole number from {bounds['minimum']} to {bounds['maximum']}")
        return int(raw)
    return raw


def time_field(body: dict, name: str):
    return parse_time(body[name], name) if body.get(name) is not None else None


def duration_field(body: dict, name: str, allow_unlimited: bool = False):
    return parse_duration(body[name], name, allow_unlimited) if body.get(name) is not None else None
