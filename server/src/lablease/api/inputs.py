"""Turning request bodies and query strings into checked Python values."""
from __future__ import annotations

import difflib
import json
import re
from urllib.parse import urlencode

import jsonschema_rs
from jsonschema import Draft202012Validator, FormatChecker
from jsonschema.exceptions import best_match
from werkzeug.datastructures import MultiDict
from werkzeug.exceptions import BadRequest, LengthRequired, RequestEntityTooLarge, UnsupportedMediaType

from ..domain.errors import Invalid, UnknownField
from ..domain.limits import MAX_INT
from ..domain.paging import DEFAULT_LIMIT, PageRequest
from ..timeparse import DURATION_PATTERN, parse_duration, parse_time
from .schemas import QUERY_KINDS, TIME


def read_body(request, limit: int) -> bytes:
    """The whole body, at most `limit` bytes (max_body_bytes), sent with a Content-Length or chunked.

    werkzeug reads a chunked body only up to its limit and then stops without a word, so a body
    past the limit would arrive cut short; it is read here, and refused (413) once it passes it.
    """
    length = request.content_length
    if length is not None and length > limit:
        raise too_large(limit)
    if length is not None:
        return request.get_data(cache=False)
    if "chunked" not in request.headers.get("Transfer-Encoding", "").lower():
        return b""
    if "wsgi.input_terminated" not in request.environ:  # a server that leaves chunks to the application
        raise LengthRequired("send the body with a Content-Length")
    stream, chunks, size = request.environ["wsgi.input"], [], 0
    while chunk := stream.read(min(64 * 1024, limit + 1 - size)):
        chunks.append(chunk)
        size += len(chunk)
        if size > limit:
            raise too_large(limit)
    return b"".join(chunks)


def too_large(limit: int) -> RequestEntityTooLarge:
    return RequestEntityTooLarge(f"the body is larger than this server's limit of {limit} bytes (max_body_bytes)")


# What a JSON body may hold. Python's decoder recurses (a body nested 5,000 deep would exhaust
# the stack) and accepts what no column can store: NaN and Infinity, numbers past PostgreSQL's
# integer (the type of every id and count column), lone surrogates ("\ud800" cannot be encoded
# as UTF-8) and NUL (PostgreSQL refuses it in text).
MAX_JSON_DEPTH = 200


def read_json(request, data: bytes) -> object:
    """The JSON body (already read, bounded), or 400/415/422 with a clear reason."""
    if not data.strip():
        return {}
    if request is not None and request.mimetype not in ("application/json", "") and not request.mimetype.endswith("+json"):
        raise UnsupportedMediaType(f"send the body as application/json, not {request.mimetype}")
    try:
        body = json.loads(data, parse_constant=_no_constant)
    except RecursionError:
        raise BadRequest(f"the body is nested too deeply (at most {MAX_JSON_DEPTH} levels)") from None
    except (ValueError, UnicodeDecodeError) as error:
        raise BadRequest(f"the body is not valid JSON: {error}") from None
    check_storable(body)
    return body


def _no_constant(name: str):
    raise ValueError(f"{name} is not a JSON number (numbers must be finite)")


def check_storable(body: object) -> None:
    """Refuse what the decoder accepts but nothing can store: too deep, non-finite or over-large numbers,
    strings holding a lone surrogate or NUL. Iterative, so no depth can exhaust the stack."""
    stack = [(body, "", 1)]
    while stack:
        node, path, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise BadRequest(f"the body is nested too deeply (at most {MAX_JSON_DEPTH} levels)")
        if isinstance(node, dict):
            for key, value in node.items():
                shown = key.encode("utf-8", "backslashreplace").decode()  # a name fit to print, whatever it holds
                _check_text(key, f"{path}.{shown}" if path else shown, is_key=True)
                stack.append((value, f"{path}.{shown}" if path else shown, depth + 1))
        elif isinstance(node, list):
            stack.extend((value, f"{path}[{index}]", depth + 1) for index, value in enumerate(node))
        elif isinstance(node, str):
            _check_text(node, path or "body")
        elif isinstance(node, (int, float)) and not isinstance(node, bool):
            # Fields stored as integers are bounded by the schemas (ids and counts: MAX_INT, "too large");
            # free-form values (attributes, a resource's spec) are JSON, which holds any finite number.
            if node != node or node in (float("inf"), float("-inf")):  # NaN, or the inf that 1e400 decodes to
                raise Invalid(path or "body", "must be a finite number")


def _check_text(text: str, path: str, is_key: bool = False) -> None:
    what = "a field name" if is_key else "a string"
    if "\x00" in text:
        raise Invalid(path, f"{what} must not hold a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise Invalid(path, f"{what} holds a lone surrogate (e.g. \\ud800), which is not text") from None


_VALIDATORS: dict[int, Draft202012Validator] = {}
# Formats checked with the schema; times are read by parse_time, which says what is wrong with them.
_FORMATS = FormatChecker(formats=("email",))


def _validator(schema: dict) -> Draft202012Validator:
    """Validators are built once per schema (the route table's schemas live as long as the process)."""
    validator = _VALIDATORS.get(id(schema))
    if validator is None:
        validator = _VALIDATORS[id(schema)] = Draft202012Validator(schema, format_checker=_FORMATS)
    return validator


_FAST: dict[int, object] = {}


def _fast_validator(schema: dict):
    """A compiled (Rust) validator of the same schema, to say "valid" quickly; None when the schema asks
    for a format (e-mail) that only the full validator checks as this server means it."""
    key = id(schema)
    if key not in _FAST:
        _FAST[key] = None if '"format": "email"' in json.dumps(schema) else \
            jsonschema_rs.Draft202012Validator(schema, validate_formats=False)
    return _FAST[key]


def _quickly_valid(body: object, schema: dict) -> bool:
    """True when the compiled validator finds body valid. Most bodies are: they skip jsonschema's walk
    (a fifth of a reserve's CPU). A refusal, or a body it cannot take (an integer past 64 bits), goes to
    jsonschema, whose errors name the field at fault, so every refusal is worded by one validator."""
    fast = _fast_validator(schema)
    if fast is None:
        return False
    try:
        return fast.is_valid(body)
    except (ValueError, OverflowError, TypeError):
        return False


def check_body(body: object, schema: dict) -> object:
    """The body, or 422 naming the field at fault when it does not match schema.

    An unknown field comes first: it is most often a misspelt one (`sytem`), which would
    otherwise be reported as the required field it was meant to be. A whole number written
    as 2.0 is an integer to JSON Schema: it comes back as the int 2.
    """
    if _quickly_valid(body, schema):
        return whole_numbers(body, schema)
    found = list(_validator(schema).iter_errors(body))
    error = next((e for e in found if e.validator == "additionalProperties"), None) or best_match(found)
    if error is None:
        return whole_numbers(body, schema)
    path = ".".join(str(p) for p in error.absolute_path)
    if error.validator == "required":
        missing = next((name for name in error.validator_value if name not in error.instance), "?")
        raise Invalid(f"{path}.{missing}" if path else missing, "is required")
    if error.validator == "additionalProperties":
        known = error.schema.get("properties", {})
        name = min(set(error.instance) - set(known), default="?")
        close = difflib.get_close_matches(name, known, n=1)
        raise UnknownField(*(f"{path}.{n}" if path else n for n in (name, *close)))
    _say_what_is_wrong_with_a_time(error, path or "body")
    if error.validator == "maximum":  # the value may be hundreds of digits long: not repeated
        raise Invalid(path or "body", f"is too large (at most {error.validator_value})")
    name = _rule_field(error)
    if name:
        raise Invalid(f"{path}.{name}" if path else name, error.schema["description"])
    if error.validator == "pattern" and "description" in error.schema:
        raise Invalid(path or "body", f"{error.instance!r} is not {error.schema['description']}")
    raise Invalid(path or "body", error.message)


_READERS = {DURATION_PATTERN: parse_duration, TIME["pattern"]: parse_time}


def _say_what_is_wrong_with_a_time(error, field: str) -> None:
    """A duration or a time the schema refused (its pattern, or a duration's numbers' bounds) is refused
    in the words of the one reader of times (timeparse: too long, years, not a duration...), never the
    regular expression's."""
    node = error
    while node is not None:
        branches = node.validator_value if node.validator == "oneOf" else []
        if node.validator == "pattern" and node.validator_value in _READERS:
            _READERS[node.validator_value](error.instance, field)  # raises Invalid with the reason
            return
        if any(isinstance(branch, dict) and branch.get("pattern") == DURATION_PATTERN for branch in branches):
            parse_duration(error.instance, field)
            return
        node = node.parent


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
    if error.validator == "not" and isinstance(error.validator_value, dict) and "anyOf" in error.validator_value:
        # "none of these combinations": name a field of the combination the body has
        given = error.instance if isinstance(error.instance, dict) else {}
        alternatives = [a for a in error.validator_value["anyOf"]
                        if isinstance(a, dict) and all(n in given for n in a.get("required", ()))] or [{}]
    if not all(isinstance(a, dict) and a.get("required") for a in alternatives):
        return None
    return alternatives[0]["required"][0]


def merge_force(query: dict, body: dict) -> bool:
    """`force` from the query string or the JSON body, which routes taking it accept alike: the
    change is forced when either says so (`?force=true` on a body saying false still forces it).

    It moves into the query, where views read it, so the body keeps only the resource's own fields.
    """
    if isinstance(body, dict) and "force" in body:
        in_body = bool(body.pop("force"))  # taken out of the body whatever the query says
        query["force"] = bool(query.get("force")) or in_body
    return bool(query.get("force"))


def query_value(kind: str, name: str, raw: str):
    """A query parameter's value by its kind (schemas.QUERY_KINDS describes them)."""
    if "\x00" in raw:  # no value holds one, and PostgreSQL refuses it in text
        raise Invalid(name, "must not hold a NUL character")
    if kind == "time":
        return parse_time(raw, name)
    if kind == "bool":
        if raw.lower() in ("1", "true", "yes"):
            return True
        if raw.lower() in ("0", "false", "no"):
            return False
        raise Invalid(name, "must be true or false")
    if kind in ("limit", "int", "wait"):
        bounds = QUERY_KINDS[kind]
        # ASCII digits only (int() also takes "+5", " 5", "1_000" and other scripts' digits)
        if not re.fullmatch("[0-9]+", raw):
            raise Invalid(name, f"must be a whole number from {bounds['minimum']} to {bounds['maximum']}")
        number = int(raw) if len(raw) <= 12 else MAX_INT + 1  # thousands of digits are not converted
        if number > bounds["maximum"]:
            raise Invalid(name, f"is too large (at most {bounds['maximum']})")
        if number < bounds["minimum"]:
            raise Invalid(name, f"must be at least {bounds['minimum']}")
        return number
    choices = QUERY_KINDS[kind].get("enum")
    if choices and raw not in choices:  # as the description says: one of these, an empty value included
        raise Invalid(name, f"must be one of {', '.join(choices)}")
    return raw


def page_request(query: dict) -> PageRequest:
    """A list's page from its query (routes.PAGING), taken out of the filters the view reads."""
    return PageRequest(query.pop("limit", DEFAULT_LIMIT), query.pop("after", None))


def next_link(request, after: str) -> str:
    """RFC 8288: the same request from the cursor on, as a reference relative to the server's root
    (clients resolve it against the URL they asked, so it holds behind any host name)."""
    args = MultiDict(request.args)
    args["after"] = after
    return f'<{request.script_root}{request.path}?{urlencode(list(args.items(multi=True)))}>; rel="next"'


def time_field(body: dict, name: str):
    return parse_time(body[name], name) if body.get(name) is not None else None


def duration_field(body: dict, name: str, allow_unlimited: bool = False):
    return parse_duration(body[name], name, allow_unlimited) if body.get(name) is not None else None
