"""A system's inventory in and out: checked against its schema, kept in the system's columns.

`processors` of the cpu is the system's `cpus` (one number, two names): given in the cpu it sets
cpus, and it is shown there from cpus.
"""
from __future__ import annotations

from functools import cache

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from ...domain.errors import Invalid
from ...domain.inventory import COLUMNS, INVENTORY_SCHEMA
from ...domain.times import format_time
from ...store.tables import System
from ...timeparse import parse_time


@cache
def _validator() -> Draft202012Validator:
    return Draft202012Validator(INVENTORY_SCHEMA)


def check_inventory(data) -> dict:
    """Column values from an `inventory` object (API or import), or Invalid naming the field."""
    error = best_match(_validator().iter_errors(data))
    if error is not None:
        path = ".".join(str(part) for part in ("inventory", *error.absolute_path))
        raise Invalid(path, error.message)
    values = dict(data)
    if values.get("last_inventoried") is not None:
        values["last_inventoried"] = parse_time(values["last_inventoried"], "inventory.last_inventoried")
    cpu = values.get("cpu")
    if cpu is not None:
        cpu = {key: value for key, value in cpu.items() if value is not None}
        if "processors" in cpu:
            values["cpus"] = cpu.pop("processors")
        values["cpu"] = cpu
    return values


def inventory_of(system: System, hardware: bool = True) -> dict:
    """The inventory as the API shows it (disks and devices only when `hardware`: they are loaded apart)."""
    shown = {name: getattr(system, name) for name in COLUMNS if hardware or name not in ("disks", "devices")}
    shown["last_inventoried"] = format_time(system.last_inventoried)
    if system.cpu is not None or system.cpus is not None:
        shown["cpu"] = {**(system.cpu or {}), "processors": system.cpus}
    return shown
