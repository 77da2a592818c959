"""The OpenAPI 3.1 description, built from the route table."""
from __future__ import annotations

import re

from .. import __version__
from . import schemas
from .routes import ROUTES, Route

_PARAM = re.compile(r"<(?:(\w+):)?(\w+)>")
_KINDS = {"time": {"type": "string", "format": "date-time"}, "bool": {"type": "boolean"},
          "int": {"type": "integer"}, "str": {"type": "string"}}
_REASONS = {400: "Malformed request", 401: "Missing, unknown, revoked or expired token", 403: "Not allowed",
            404: "Not found", 409: "Conflict (e.g. the calendar is booked)", 413: "Body too large",
            415: "Body of a type the route does not take",
            422: "Invalid input (names the field)", 429: "Limit reached"}


def openapi_path(path: str) -> str:
    return _PARAM.sub(lambda m: "{" + m.group(2) + "}", path)


def _parameters(route: Route) -> list[dict]:
    params = [
        {"name": name, "in": "path", "required": True,
         "schema": {"type": "integer"} if converter == "int" else {"type": "string"}}
        for converter, name in _PARAM.findall(route.path)
    ]
    params += [{"name": name, "in": "query", "required": False, "description": text, "schema": _KINDS[kind]}
               for name, (kind, text) in route.query.items()]
    return params


def _problem(reason: str) -> dict:
    return {"description": reason, "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}}


def _operation(route: Route) -> dict:
    ok = {"description": route.summary}
    if route.response is not None:
        ok["content"] = {"application/json": {"schema": route.response}}
    responses = {str(route.status): ok}
    for status, schema in route.also.items():  # e.g. 200 when a request_id matched an earlier request
        responses[str(status)] = {"description": route.summary, "content": {"application/json": {"schema": schema}}}
    failures = ({400, 422} | ({401} if route.auth else set()) | ({413} if route.body or route.raw else set())
                | set(route.statuses))
    for code in sorted(failures):
        responses[str(code)] = _problem(_REASONS[code])
    operation = {
        "summary": route.summary,
        "operationId": (route.method.lower() + "_" + re.sub(r"\W+", "_", openapi_path(route.path))).strip("_"),
        "tags": [route.tag],
        "parameters": _parameters(route),
        "responses": responses,
    }
    if route.body is not None:
        operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": route.body}}}
    elif route.raw:
        operation["requestBody"] = {"required": True, "content": {
            "application/xml": {"schema": {"type": "string", "description": "job XML (see docs/jobs.md)"}},
            "application/json": {"schema": {"type": "object", "description": "the job's JSON form"}}}}
    if not route.auth:
        operation["security"] = []
    return operation


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
            "schemas": {"Problem": schemas.PROBLEM},
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
    }
