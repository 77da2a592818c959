"""The OpenAPI 3.1 description, built from the route table."""
from __future__ import annotations

import json
import re

from jsonschema import Draft202012Validator

from .. import __version__
from ..jobxml.schema import JOB_DESCRIPTION
from . import schemas
from .routes import ROUTES, Route

# <name>, <int:name> or <any(a, b):name>
_PARAM = re.compile(r"<(?:(\w+)(?:\(([^)]*)\))?:)?(\w+)>")
_REASONS = {400: "Malformed request", 401: "Missing, unknown, revoked or expired token", 403: "Not allowed",
            404: "Not found (also: a path that names nothing, or a malformed id)",
            409: "Conflict (e.g. the calendar is booked)", 413: "Body too large (the detail says the limit)",
            415: "Body of a type the route does not take",
            410: "Gone: the cursor is older than the events kept (the detail and `oldest` name the oldest kept)",
            422: "Invalid input (names the field)", 429: "Limit reached",
            503: ("The database is unavailable, out of disk space, out of connections or busy: "
                  "retry after Retry-After seconds")}
# Every list's answer: the body is one page (a JSON array); the next page's URL, if any, is here.
NEXT_LINK = {"description": 'RFC 8288: <URL>; rel="next" while more entries follow (absent on the last page). '
                            "The URL is relative to the server (resolve it against the request's URL) and "
                            "carries the same filters and limit with an opaque after= cursor.",
             "schema": {"type": "string"}}


def openapi_path(path: str) -> str:
    return _PARAM.sub(lambda m: "{" + m.group(3) + "}", path)


def _path_schema(converter: str, args: str, name: str) -> dict:
    if converter == "int":
        return schemas.ID
    if converter == "any":
        return {"enum": [arg.strip() for arg in args.split(",")]}
    return schemas.PATH_PARAMETERS[name]


def keyed(route: Route) -> bool:
    """A route that takes an Idempotency-Key (api/app.py): every POST that needs a token."""
    return route.method == "POST" and route.auth


IDEMPOTENCY_KEY = {
    "name": "Idempotency-Key", "in": "header", "required": False,
    "description": ("a client-chosen key (1 to 128 visible ASCII characters): the same request sent again with it "
                    "gets the first answer again (header Idempotent-Replayed: true) instead of making a second "
                    "object; another request with it is refused (409). Routes with a request_id take it as that id. "
                    "Kept for idempotency_keep (docs/api.md, \"Retrying a write\")"),
    "schema": {"type": "string", "pattern": "^[!-~]{1,128}$"}}


def _parameters(route: Route) -> list[dict]:
    params = [{"name": name, "in": "path", "required": True, "schema": _path_schema(converter, args, name)}
              for converter, args, name in _PARAM.findall(route.path)]
    params += [{"name": name, "in": "query", "required": False, "description": text,
                "schema": schemas.QUERY_KINDS[kind]}
               for name, (kind, text) in route.query.items()]
    params += [{"name": name, "in": "header", "required": False, "description": text,
                "schema": schemas.QUERY_KINDS[kind]} for name, (kind, text) in route.headers.items()]
    if keyed(route):
        params.append(IDEMPOTENCY_KEY)
    return params


def failures(route: Route) -> set[int]:
    """Every failure status the route can answer: those of every route, then its own (route.statuses)."""
    common = {400, 422, 503}  # 503: a database outage (any route opens a transaction)
    if route.auth:
        common.add(401)
    if "<" in route.path:
        common.add(404)  # the router's answer to a path that names nothing
    if route.body is not None or route.raw:
        common |= {413, 415}
    if keyed(route):
        common.add(409)  # the key was used for another request
    return common | {code for code in route.statuses if code >= 400}


def _problem(reason: str) -> dict:
    return {"description": reason, "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}


def _success(route: Route, status: int) -> dict:
    description, schema = route.summary, route.response
    if status != route.status:
        extra = route.also[status]
        description, schema = extra if isinstance(extra, tuple) else (extra, route.response)
    ok = {"description": description}
    if schema is not None and status != 204:
        ok["content"] = {route.media: {"schema": schema}}
        ok["content"].update({media: {"schema": other} for media, other in route.alternatives.items()})
    if route.paged:
        ok["headers"] = {"Link": NEXT_LINK}
    return ok


def _body(route: Route) -> dict:
    # An empty body is read as {}: the body is required when {} is not a valid one (e.g. PATCH changing nothing is).
    return {"required": not Draft202012Validator(route.body).is_valid({}),
            "content": {"application/json": {"schema": route.body}}}


def _operation(route: Route) -> dict:
    responses = {str(status): _success(route, status) for status in sorted({route.status, *route.also})}
    for code in sorted(failures(route)):
        responses[str(code)] = _problem(_REASONS[code])
    operation = {
        "summary": route.summary,
        "operationId": (route.method.lower() + "_" + re.sub(r"\W+", "_", openapi_path(route.path))).strip("_"),
        "tags": [route.tag],
        "parameters": _parameters(route),
        "responses": responses,
    }
    if route.body is not None:
        operation["requestBody"] = _body(route)
    elif route.raw:
        operation["requestBody"] = {"required": True,
                                    "content": {media: {"schema": schema} for media, schema in route.raw.items()}}
    if not route.auth:
        operation["security"] = []
    return operation


def _component(schema: dict, name: str) -> dict:
    """A JSON Schema document as a component: its "#/$defs/..." references point into it where it now is."""
    text = json.dumps({key: value for key, value in schema.items() if key not in ("$schema", "$id")})
    return json.loads(text.replace('"#/$defs/', f'"#/components/schemas/{name}/$defs/'))


def build_spec(base_url: str = "") -> dict:
    paths: dict[str, dict] = {}
    for route in ROUTES:
        paths.setdefault(openapi_path(route.path), {})[route.method.lower()] = _operation(route)
    return {
        "openapi": "3.1.0",
        "info": {"title": "lablease", "version": __version__,
                 "description": "Reserve lab systems now or in advance; a calendar that never double-books."},
        "servers": [{"url": base_url or "/"}],
        "paths": paths,
        "components": {
            "schemas": {"Problem": schemas.PROBLEM, "Job": _component(JOB_DESCRIPTION, "Job")},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }
