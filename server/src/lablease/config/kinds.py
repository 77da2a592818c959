"""The types a setting can have: how a value is read (from YAML, or environment text) and shown.

A setting's annotation in settings.py chooses its kind (KINDS), so the type
is said once. Reading is idempotent: a typed value passes through unchanged,
which lets `Settings(command_timeout="1s")` and `replace(settings, ...)` both
go through the same checks as the file and the environment.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import timedelta
from typing import Callable

import yaml

from ..domain.destinations import Network, parse_networks
from ..domain.errors import Invalid
from ..domain.times import format_human
from ..timeparse import parse_duration


@dataclass(frozen=True)
class Kind:
    name: str  # as docs/configuration.md names the type
    read: Callable[[str, object], object]  # (setting, raw value) -> the typed value, or Invalid naming the setting
    show: Callable[[object], object] = lambda value: value  # typed value -> a JSON value, written as the file takes it


def _text(name: str, raw) -> str:
    if isinstance(raw, (dict, list, tuple)):
        raise Invalid(name, "must be text, not a list or a mapping")
    return "" if raw is None else str(raw)


def _boolean(name: str, raw) -> bool:
    if isinstance(raw, bool):
        return raw
    if str(raw).lower() in ("1", "true", "yes", "on"):
        return True
    if str(raw).lower() in ("0", "false", "no", "off", ""):
        return False
    raise Invalid(name, f"{raw!r} is not true or false")


def _whole_number(name: str, raw) -> int:
    if isinstance(raw, bool) or isinstance(raw, float) and not raw.is_integer():
        raise Invalid(name, f"{raw!r} is not a whole number")
    try:
        return int(raw)
    except (TypeError, ValueError):
        raise Invalid(name, f"{raw!r} is not a whole number") from None


def _duration(name: str, raw) -> timedelta:
    if isinstance(raw, timedelta):
        if raw <= timedelta(0):
            raise Invalid(name, "must be positive")
        return raw
    return parse_duration(raw, name)


def _optional_duration(name: str, raw) -> timedelta | None:
    return None if raw is None or raw == "" else _duration(name, raw)


def _show_duration(value: timedelta | None) -> str:
    return "" if value is None else format_human(value)


def _list(name: str, raw) -> tuple[str, ...]:
    """A YAML list, or text separated by commas or spaces (the environment)."""
    values = raw.replace(",", " ").split() if isinstance(raw, str) else (raw or [])
    if not isinstance(values, (list, tuple)) or not all(isinstance(v, (str, int, float)) for v in values):
        raise Invalid(name, "must be a list (in the environment: separated by commas or spaces)")
    return tuple(str(v) for v in values)


def _networks(name: str, raw) -> tuple[Network, ...]:
    try:
        values = tuple(str(v) for v in raw) if isinstance(raw, (list, tuple)) else _list(name, raw)
        return parse_networks(values, name)
    except ValueError as error:
        raise Invalid(name, str(error).partition(": ")[2]) from None


LAB_KEYS = ("tftp_root", "install_url")


def _labs(name: str, raw) -> dict[str, dict[str, str]]:
    """{lab name: {tftp_root?, install_url?}} from YAML, or YAML/JSON text (the environment)."""
    try:
        labs = (yaml.safe_load(raw) if isinstance(raw, str) else raw) or {}
    except yaml.YAMLError:
        raise Invalid(name, "is not YAML or JSON") from None
    if not isinstance(labs, dict) or not all(isinstance(v, dict) for v in labs.values()):
        raise Invalid(name, "must map lab names to {tftp_root, install_url}")
    for lab, values in labs.items():
        unknown = sorted(set(values) - set(LAB_KEYS))
        if unknown:
            raise Invalid(name, f"lab {lab}: unknown key(s) {', '.join(unknown)}; known: {', '.join(LAB_KEYS)}")
    return {str(lab): {k: str(v) for k, v in values.items()} for lab, values in labs.items()}


TEXT = Kind("text", _text)
BOOLEAN = Kind("boolean", _boolean)
WHOLE_NUMBER = Kind("whole number", _whole_number)
DURATION = Kind("duration", _duration, _show_duration)
OPTIONAL_DURATION = Kind("duration or empty", _optional_duration, _show_duration)
LIST = Kind("list", _list, list)
NETWORKS = Kind("list of CIDR networks", _networks, lambda value: [str(n) for n in value])
LABS = Kind("map of labs", _labs)

# The annotation of a setting -> its kind. A setting of any other type is refused when settings.py is imported.
KINDS = {str: TEXT, bool: BOOLEAN, int: WHOLE_NUMBER, timedelta: DURATION, timedelta | None: OPTIONAL_DURATION,
         tuple[str, ...]: LIST, tuple[Network, ...]: NETWORKS, dict[str, dict[str, str]]: LABS}


def as_text(value) -> str:
    """A shown value as one line of text, as a person would write it in the file."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(v) for v in value)
    if isinstance(value, dict):
        return json.dumps(value) if value else ""
    return "" if value is None else str(value)
