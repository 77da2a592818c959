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


def status_rows() -> dict[int, str]:
    """docs/cli.md's exit status table: status -> its row."""
    text = DOC.read_text().split("## Exit status", 1)[1].split("\n## ", 1)[0]
    return {int(line.split("|")[1]): line for line in text.splitlines() if line.startswith("| ") and
            line.split("|")[1].strip().isdigit()}


def test_every_exit_status_is_in_the_table():
    rows = status_rows()
    assert sorted(rows) == sorted(status.value for status in ExitStatus)  # no more, no fewer: the one truth
    for status in ExitStatus:
        assert f"| {status.value} | `{status.name}` |" in rows[status.value], status


def test_every_command_that_waits_is_in_the_rows_of_its_exit_statuses():
    """A command with --timeout can exit 8 and 9 (ENDED, TIMED_OUT): both rows name it."""
    rows = status_rows()
    waiting = []
    stack = [("lablease", build_parser())]
    while stack:
        name, current = stack.pop()
        for action in current._actions:
            if "--timeout" in action.option_strings:
                waiting.append(name.removeprefix("lablease "))
            if isinstance(action, argparse._SubParsersAction):
                stack.extend((f"{name} {sub}", parser) for sub, parser in action.choices.items())
    assert sorted(waiting) == ["job submit", "power", "provision", "reserve"]
    for command in waiting:
        for status in (ExitStatus.ENDED, ExitStatus.TIMED_OUT):
            assert f"`{command}" in rows[status.value], (command, status)


def test_the_help_names_every_exit_status():
    epilog = build_parser().epilog
    for status in ExitStatus:
        if status != ExitStatus.SUCCESS:
            assert f"{status.value} " in epilog, status


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
