"""Docs are tested: every setting and every API route is documented."""
from dataclasses import fields
from pathlib import Path

from lablease.api.openapi import openapi_path
from lablease.api.routes import ROUTES
from lablease.config import Settings

DOCS = Path(__file__).resolve().parents[3] / "docs"


def test_every_setting_is_documented():
    text = (DOCS / "configuration.md").read_text()
    for setting in fields(Settings):
        assert f"`{setting.name}`" in text, setting.name
        assert f"`LABLEASE_{setting.name.upper()}`" in text, setting.name


def test_every_route_is_in_the_api_guide():
    text = (DOCS / "api.md").read_text()
    for route in ROUTES:
        assert f"{route.method} {openapi_path(route.path)}" in text, route.endpoint
