"""The collection's unit tests check every answer of their fake API against the server's own
description (tests/unit/plugins/openapi.json: ansible-test runs them on the collection alone, without
the server). This test keeps that copy equal to the description the server generates, so a change of
the API fails here until the copy - and so the fake - follows it.

To refresh the copy:  LABLEASE_UPDATE_OPENAPI_COPY=1 pytest tests/server/unit/test_openapi_copy.py
"""
from __future__ import annotations

import json
import os
from pathlib import Path

from lablease.api.openapi import build_spec

COPY = Path(__file__).resolve().parents[2] / "unit" / "plugins" / "openapi.json"


def generated() -> str:
    spec = build_spec()
    spec["info"].pop("version")  # the copy follows the API, not each release number
    return json.dumps(spec, indent=1, sort_keys=True) + "\n"


def test_the_collections_copy_of_the_openapi_description_is_the_servers():
    if os.environ.get("LABLEASE_UPDATE_OPENAPI_COPY"):
        COPY.write_text(generated())
    assert COPY.read_text() == generated(), (
        "tests/unit/plugins/openapi.json differs from the server's OpenAPI description: refresh it with "
        "LABLEASE_UPDATE_OPENAPI_COPY=1 pytest tests/server/unit/test_openapi_copy.py, then make the fake API "
        "(tests/unit/plugins/fake_api.py) answer as the server now does")
