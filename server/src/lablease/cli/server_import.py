"""`lablease-server system import FILE`: systems from YAML, by the API's rules.

Each system is read as the JSON body of POST /api/v1/systems would be (the same schema: an unknown or
misspelt field is refused, never dropped) and goes through the same use case (services/catalog/systems.py
import_systems: add_system or update_system, with their checks, events and consequences). Every refused
system is named by file, line, position and name; nothing is written unless every one is accepted.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import date, datetime

import yaml

from ..api.inputs import check_body, check_storable
from ..api.schemas import SYSTEM_IMPORT
from ..domain.errors import Invalid
from ..domain.times import format_time
from ..services.catalog import systems
from .import_refused import ImportRefused


class ImportLoader(yaml.SafeLoader):
    """YAML 1.2's numbers: an unquoted `mac: 52:54:00:12:34:56` is text, not YAML 1.1's base-60 integer
    (PyYAML reads 1.1, which would turn a MAC of digits into a number and a time such as 12:30 into 750)."""


ImportLoader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers
            if tag not in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()}
ImportLoader.add_implicit_resolver(
    "tag:yaml.org,2002:int", re.compile(r"^[-+]?(?:0|[1-9][0-9]*|0x[0-9a-fA-F]+)$"), list("-+0123456789"))
ImportLoader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:(?:[0-9]+\.[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?|[0-9]+[eE][-+]?[0-9]+)$|^[-+]?\.(?:inf|Inf|INF)$|^\.(?:nan|NaN|NAN)$"),
    list("-+0123456789."))


@dataclass(frozen=True)
class Row:
    index: int  # its place in the list, from 0
    line: int  # where it starts in the file, from 1
    value: object  # as YAML read it

    def named(self, path: str) -> str:
        fqdn = self.value.get("fqdn") if isinstance(self.value, dict) else None
        return f"{path}:{self.line}: system {self.index + 1}" + (f" ({fqdn})" if isinstance(fqdn, str) else "")


def read_rows(path: str, text: str) -> list[Row]:
    """The systems of the file (a list, at the top or under `systems:`), each with the line it starts on."""
    loader = ImportLoader(text)
    try:
        node = loader.get_single_node()
        document = loader.construct_document(node) if node is not None else None
    except yaml.YAMLError as error:
        raise ImportRefused(f"{path}: not valid YAML: {_yaml_problem(error)}; nothing imported") from None
    finally:
        loader.dispose()
    if isinstance(document, dict):
        others = sorted(str(key) for key in document if key != "systems")
        if others or not isinstance(document.get("systems"), list):
            why = f"unknown key {others[0]!r}" if others else "systems: must be a list"
            raise ImportRefused(f"{path}: {why}; the file holds a list of systems, at the top or under systems:")
        node = next(value for key, value in node.value if key.value == "systems")
        document = document["systems"]
    if not isinstance(document, list) or not document:
        raise ImportRefused(f"{path}: holds no systems (a list of them, at the top or under systems:)")
    return [Row(index, item.start_mark.line + 1, value) for index, (item, value) in enumerate(zip(node.value, document))]


def _yaml_problem(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error)
    return problem + (f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else "")


def checked(row: Row) -> dict:
    """The system as the API would take its JSON body: YAML's times as RFC 3339 text, then the same checks."""
    if not isinstance(row.value, dict):
        raise Invalid("system", "must be a mapping of its fields (fqdn, arch, ...)")
    try:
        body = json.loads(json.dumps(row.value, default=_as_text))
    except (TypeError, ValueError) as error:
        raise Invalid("system", f"cannot be read as JSON: {error}") from None
    check_storable(body)
    return check_body(body, SYSTEM_IMPORT)


def _as_text(value):
    if isinstance(value, datetime):
        return format_time(value) if value.tzinfo else value.isoformat()
    if isinstance(value, date):
        return value.isoformat()
    raise TypeError(f"{value!r} is not a JSON value")


def import_file(uow, actor, now: datetime, path: str, text: str, force: bool) -> dict:
    """Check every system and import them in the unit of work, or none: ImportRefused names each refused one."""
    rows = read_rows(path, text)
    refused, entries = {}, []
    for row in rows:
        try:
            entries.append((row.index, checked(row)))
        except Invalid as error:
            refused[row.index] = error.detail
    result = systems.import_systems(uow, actor, now, entries, force, refused)
    refused = result["refused"]
    if refused:
        lines = [f"{rows[index].named(path)}: {refused[index]}" for index in sorted(refused)]
        raise ImportRefused("\n".join([f"{path}: nothing imported: {len(refused)} of {len(rows)} system(s) refused",
                                       *lines]))
    return result
