"""The server's answers held to its own OpenAPI description.

The checker is the collection's (tests/unit/plugins/openapi_check.py), which holds the collection's fake
API to the same description: loaded by file, since that package lives in the collection's namespace.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

from lablease.api.openapi import build_spec

_CHECK = Path(__file__).resolve().parents[1] / "unit" / "plugins" / "openapi_check.py"
_spec = importlib.util.spec_from_file_location("lablease_openapi_check", _CHECK)
openapi_check = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(openapi_check)

CONTRACT = openapi_check.Contract(build_spec())


def check_answer(method: str, path: str, status: int, content_type: str, body) -> None:
    """Fail when the server answered a documented route with a status or a JSON body its description lacks.

    Routes the description does not have (a test probing an unknown path) are the router's business."""
    path = path.split("?", 1)[0]
    if CONTRACT.find(method, path)[1] is None:
        return
    problem = content_type == "application/problem+json"
    if content_type not in ("application/json", "application/problem+json"):
        body = None  # the kickstart text, a 204: only the status is checked
    CONTRACT.check_answer(method, path, status, body, problem=problem, who="the server")
