"""docs/cli.md is tested: every command has its section and every exit status its row."""
from __future__ import annotations

import argparse
from pathlib import Path

from lablease.cli.client_parser import build_parser
from lablease.cli.client_status import ExitStatus

DOC = Path(__file__).resolve().parents[3] / "docs" / "cli.md"


def commands(parser: argparse.ArgumentParser, prefix: str = "lablease") -> list[str]:
    """Every runnable command line, e.g. 'lablease loan grant'."""
    found = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found += commands(sub, f"{prefix} {name}")
    return found or [prefix]


def test_every_command_has_a_section():
    headings = [line for line in DOC.read_text().splitlines() if line.startswith("### ")]
    names = commands(build_parser())
    assert len(names) >= 19
    for name in names:
        assert any(f"`{name} " in h or f"`{name}`" in h for h in headings), name


def test_every_exit_status_is_in_the_table():
    text = DOC.read_text()
    for status in ExitStatus:
        assert f"| {status.value} | `{status.name}` |" in text, status


def test_every_option_is_mentioned():
    text = DOC.read_text()
    parser = build_parser()
    stack, options = [parser], set()
    while stack:
        current = stack.pop()
        for action in current._actions:
            options.update(o for o in action.option_strings if o.startswith("--") and o != "--help")
            if isinstance(action, argparse._SubParsersAction):
                stack.extend(action.choices.values())
    assert options, "no options found"
    for option in options:
        assert option in text, option
