"""Docs are tested: every setting, every API route and every command-line command and option is documented."""
import argparse
import re
from dataclasses import fields
from pathlib import Path

import pytest

from lablease.api.openapi import openapi_path
from lablease.api.routes import ROUTES
from lablease.cli.client_parser import build_parser
from lablease.cli.server import parser as server_parser
from lablease.config import Settings, specs
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


def _commands(parser, path):
    """(command words, its --options) for the parser and every subcommand under it."""
    options = sorted({option for action in parser._actions for option in action.option_strings
                      if option.startswith("--") and action.help != argparse.SUPPRESS and option != "--help"})
    yield " ".join(path), options
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _commands(child, path + [name])


@pytest.mark.parametrize("program, parser", [("lablease", build_parser), ("lablease-server", server_parser)])
def test_every_cli_command_and_option_is_in_the_cli_guide(program, parser):
    text = (DOCS / "cli.md").read_text()
    missing = []
    for command, options in _commands(parser(), [program]):
        if f"`{command}" not in text:
            missing.append(command)
        missing += [f"{command} {option}" for option in options if option not in text]
    assert missing == []


def test_every_file_the_docs_name_exists():
    """A doc naming `store/calendar.py` or `tests/e2e/test_storm.py` names a file that is there."""
    root = DOCS.parent
    files = {str(path.relative_to(root)) for top in ("server", "plugins", "roles", "playbooks", "tests", "docs",
                                                       "bench", "changelogs", "meta", "scripts", "deploy", "extensions")
             for path in (root / top).rglob("*") if path.is_file()}
    named = {(page.name, match) for page in [*DOCS.glob("*.md"), root / "README.md"]
             for match in re.findall(r"`([\w.-][\w./-]*/[\w.-]+\.(?:py|md|yml|yaml|toml|rng|xsd|json))`", page.read_text())
             if not re.search(r"[A-Z]{3,}", match)}  # placeholders: plugins/modules/NAME.py
    missing = [f"{page}: {path}" for page, path in sorted(named)
               if not any(f == path or f.endswith("/" + path) for f in files)]
    assert len(named) > 20 and missing == []
