"""One error shape for every route: application/problem+json (RFC 9457).

ERROR_STATUS is the one table that maps domain errors to HTTP statuses.
"""
from __future__ import annotations

import json
import logging
import secrets

from sqlalchemy.exc import IntegrityError
from werkzeug.exceptions import HTTPException
from werkzeug.wrappers import Response

from ..domain import errors

log = logging.getLogger("lablease.api")

ERROR_STATUS: dict[type, int] = {
    errors.Invalid: 422,
    errors.NotFound: 404,
    errors.Unauthenticated: 401,
    errors.Forbidden: 403,
    errors.BookingConflict: 409,
    errors.CapacityExceeded: 409,
    errors.Conflict: 409,
    errors.LimitReached: 429,
    errors.NotReady: 503,
    errors.Gone: 410,
    errors.DomainError: 400,
}


def _slug(name: str) -> str:
    return "".join("-" + c.lower() if c.isupper() else c for c in name).lstrip("-")


def problem(status: int, title: str, detail: str, kind: str | None = None, headers=None, **extra) -> Response:
    body = {
        "type": f"urn:lablease:problem:{kind or status}",
        "title": title,
        "status": status,
        "detail": detail,
        **extra,
    }
    response = Response(json.dumps(body), status=status, mimetype="application/problem+json", headers=headers)
    if status == 401:
        response.headers["WWW-Authenticate"] = 'Bearer realm="lablease"'
    return response


def from_domain(error: errors.DomainError) -> Response:
    status = next(code for kind, code in ERROR_STATUS.items() if isinstance(error, kind))
    return problem(status, error.title, error.detail, _slug(type(error).__name__), **error.extra)


def from_http(error: HTTPException) -> Response:
    detail = error.description or error.name
    headers = None
    if error.code == 405 and getattr(error, "valid_methods", None):
        headers = {"Allow": ", ".join(sorted(error.valid_methods))}  # werkzeug gathers them in a set
    return problem(error.code or 500, error.name, detail, _slug(type(error).__name__), headers=headers)


def unexpected(request) -> Response:
    """A 500 for a bug: the body carries an error id, the log the traceback under the same id.

    Only the path is logged, never the query: installers' URLs carry their token in ?token=.
    """
    error_id = secrets.token_hex(6)
    log.exception("error %s: unexpected exception answering %s %s", error_id, request.method, request.path)
    return problem(500, "Internal Server Error",
                   f"an unexpected error occurred; the administrator can find it in the server log as error {error_id}",
                   "internal", error_id=error_id)


def unavailable(outage) -> Response:
    """A 503 for a database outage (store/outage.py): what failed, and when to retry."""
    return problem(503, outage.title, outage.detail, outage.kind, headers={"Retry-After": str(outage.retry_after)})


# The database's own guards of "one holder per system" (migration 0024 and the exclusion constraint of 0001).
_ONE_HOLDER = ("one holder", "one_holder", "bookings_no_overlap")


def integrity_detail(error: IntegrityError) -> str:
    """What a guard of the schema refused (an IntegrityError), as a sentence: a second holder of a system,
    or a race. The API and the pages answer it 409."""
    if any(mark in str(error.orig) for mark in _ONE_HOLDER):
        return ("a system has one holder at a time: the database refused a change that would give one a second "
                "holder (or leave a recipe on a system without its reservation); read the system again")
    return "the request conflicts with a concurrent change; retry it"


def as_refusal(error: Exception) -> errors.DomainError:
    """A refusal to show: a rule's, or a guard of the schema's (a Conflict); anything else is raised again."""
    if isinstance(error, errors.DomainError):
        return error
    if isinstance(error, IntegrityError):
        return errors.Conflict(integrity_detail(error))
    raise error
