"""Rendering answers: aligned tables and `key: value` blocks for people, JSON and XML for machines.

The XML form is deliberately plain (docs/cli.md, "XML output"): one element
per object, one child element per field, list items named in the singular,
`null="true"` on an empty field that is null. It is built with the
standard library's xml.etree, which only writes here (never parses input).
"""
from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from typing import Callable, Iterable, Sequence

from ..domain import times
from ..domain.errors import Invalid

EMPTY = "-"
SINGULAR = {"systems": "system", "groups": "group", "rules": "rule", "pools": "pool",
            "reservations": "reservation", "loans": "loan", "jobs": "job", "recipe_sets": "recipe_set",
            "recipes": "recipe", "tasks": "task", "busy": "candidate", "tags": "tag", "labs": "lab"}
XML_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9._-]*$")

Column = tuple[str, Callable[[dict], object]]


def when(value: str | None, none: str = EMPTY) -> str:
    """A time in an answer as people read it (`2026-11-24 19:15 UTC`, domain/times.py: format_when), whatever
    zone the server used; text that is no time is shown as it is. Machine output (--json, XML) keeps the
    answer's RFC 3339."""
    if not value:
        return none
    from ..timeparse import parse_time  # imported late: the CLI starts light

    try:
        return times.format_when(parse_time(value, "time"))
    except Invalid:
        return value


def rfc3339(value: str | None) -> str | None:
    """A time in an answer as lablease writes times for machines (qrstat's XML)."""
    if not value:
        return value
    from ..timeparse import parse_time

    try:
        return times.format_time(parse_time(value, "time"))
    except Invalid:
        return value


for_people = times.for_people  # a message's RFC 3339 instants as people read them


def typed_time(text: str) -> str:
    """A time option as typed: the form the CLI shows (`2026-11-24 19:15 UTC`) is sent as RFC 3339; anything
    else goes as it is (RFC 3339, or something the server refuses naming the field)."""
    return times.when_as_rfc3339(text) or text
format_human = times.format_human  # a duration for people: 1h30m, 2d, 1w
format_hms = times.format_hms  # Grid Engine's h:m:s (qrstat)


def text(value) -> str:
    """A cell: '-' for nothing, 'yes'/'no' for booleans, lists joined by commas; a time in it as people
    read times (a server's message, say, names RFC 3339 instants)."""
    if value is None or value == "" or value == []:
        return EMPTY
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (list, tuple)):
        return ", ".join(text(v) for v in value)
    return times.for_people(str(value))


def table(rows: Iterable[dict], columns: Sequence[Column]) -> str:
    """An aligned table with a header row; two spaces between columns."""
    cells = [[header for header, _ in columns]]
    cells += [[text(getter(row)) for _, getter in columns] for row in rows]
    widths = [max(len(line[i]) for line in cells) for i in range(len(columns))]
    lines = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in cells]
    return "\n".join(lines)


def key_values(pairs: Sequence[tuple[str, object]]) -> str:
    """`label:  value` lines with the values aligned."""
    width = max((len(label) for label, _ in pairs), default=0) + 1
    return "\n".join(f"{label + ':':<{width}}  {text(value)}".rstrip() for label, value in pairs)


def to_json(data) -> str:
    return json.dumps(data, indent=2, sort_keys=False)


def to_xml(data, tag: str, plural: str | None = None) -> str:
    """A list becomes <plural><tag>..</tag>..</plural>; an object becomes <tag>..</tag>."""
    if isinstance(data, list):
        root = ET.Element(plural or tag + "s")
        for item in data:
            _fill(ET.SubElement(root, tag), item)
    else:
        root = ET.Element(tag)
        _fill(root, data)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True)


def _child(parent: ET.Element, key: str) -> ET.Element:
    if XML_NAME.match(key) and not key.lower().startswith("xml"):
        return ET.SubElement(parent, key)
    return ET.SubElement(parent, "entry", key=key)


def _fill(element: ET.Element, value) -> None:
    if value is None:
        element.set("null", "true")
    elif isinstance(value, dict):
        for key, item in value.items():
            _fill(_child(element, str(key)), item)
    elif isinstance(value, list):
        name = SINGULAR.get(element.tag, "item")
        for item in value:
            _fill(ET.SubElement(element, name), item)
    elif isinstance(value, bool):
        element.text = "true" if value else "false"
    else:
        element.text = str(value)
