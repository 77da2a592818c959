"""Docs are tested: every setting and every API route is documented."""
from pathlib import Path

from lablease.api.openapi import openapi_path
from lablease.api.routes import ROUTES
from lablease.config import specs
from lablease.config.reference import current, generated

DOCS = Path(__file__).resolve().parents[3] / "docs"


def test_the_settings_table_is_the_definition():
    """Each setting's type, default, unit and meaning are written in settings.py, and the page says the same."""
    page = (DOCS / "configuration.md").read_text()
    assert current(page) == generated(), (
        "docs/configuration.md differs from the settings' definition: "
        "run python -m lablease.config.reference --write docs/configuration.md")
    for spec in specs():
        assert f"| `{spec.name}` | `{spec.variable}` |" in page, spec.name


def test_every_route_is_in_the_api_guide():
    text = (DOCS / "api.md").read_text()
    for route in ROUTES:
        assert f"{route.method} {openapi_path(route.path)}" in text, route.endpoint
