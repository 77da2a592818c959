"""The settings written out: the effective ones (`lablease-server config show`) and the reference
table of docs/configuration.md, both from the one definition in settings.py.

`python -m lablease.config.reference --write docs/configuration.md` rewrites the
generated part of that page (between the two markers); without --write it prints it.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .loading import OTHER_VARIABLES, Loaded
from .settings import hidden, specs

BEGIN = ("<!-- generated from server/src/lablease/config/ by `python -m lablease.config.reference --write`: "
         "edit there -->")
END = "<!-- end of the generated part -->"


def effective(loaded: Loaded) -> list[dict]:
    """Each setting's value (a JSON value, secrets masked) and where it came from."""
    return [{"setting": spec.name, "value": spec.show(getattr(loaded.settings, spec.name)),
             "source": loaded.sources[spec.name]} for spec in specs()]


def _cell(text: str) -> str:
    return text.replace("|", "\\|")


def generated() -> str:
    """The part of docs/configuration.md made from the definitions, markers included."""
    lines = [BEGIN, "", "| setting | environment | type | default | meaning |", "|---|---|---|---|---|"]
    for spec in specs():
        kind = spec.kind.name + (f" ({spec.unit})" if spec.unit else "")
        if spec.minimum is not None:
            kind += f", {spec.minimum} to {spec.maximum}" if spec.maximum is not None else f", at least {spec.minimum}"
        kind += "" if spec.mask is None else (", secret" if spec.mask is hidden else ", password hidden")
        lines.append(f"| `{spec.name}` | `{spec.variable}` | {kind} | {_cell(spec.default_text())} "
                     f"| {_cell(spec.doc)} |")
    lines += ["", "Other `LABLEASE_` variables are not settings; these are left alone, any other is refused:", "",
              "| variable | what it is |", "|---|---|"]
    lines += [f"| `{name}` | {_cell(meaning)} |" for name, meaning in OTHER_VARIABLES.items()]
    return "\n".join([*lines, "", END])


def current(page: str) -> str:
    """The generated part as the page has it now (empty when the markers are missing)."""
    start, end = page.find(BEGIN), page.find(END)
    return page[start:end + len(END)] if start >= 0 and end > start else ""


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lablease.config.reference", description=__doc__)
    parser.add_argument("--write", metavar="PAGE", help="replace the generated part of this page")
    args = parser.parse_args(argv)
    if not args.write:
        print(generated())
        return 0
    page = Path(args.write).read_text(encoding="utf-8")
    if not current(page):
        print(f"{args.write}: the markers are missing:\n{BEGIN}\n{END}", file=sys.stderr)
        return 1
    Path(args.write).write_text(page.replace(current(page), generated()), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
