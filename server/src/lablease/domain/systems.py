"""System conditions, usage states, and what a valid system looks like."""
from __future__ import annotations

import re

from .errors import Conflict, Invalid

CONDITIONS = ("automated", "manual", "broken", "removed")
USAGES = ("idle", "scheduled", "waiting", "installing", "running", "pending")
RELEASE_ACTIONS = ("power_off", "leave_on", "reprovision")
ARCHES = ("x86_64", "aarch64", "ppc64le", "s390x", "i386", "ppc64", "armhfp", "riscv64")

# Labels of letters, digits and inner hyphens, dot-separated; at most FQDN_MAX long (also in the API description)
FQDN_PATTERN = r"^[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)*$"
FQDN_MAX = 253
_FQDN = re.compile(FQDN_PATTERN)


def check_fqdn(fqdn: str) -> str:
    # fullmatch: "$" alone lets a final newline in
    if not isinstance(fqdn, str) or len(fqdn) > FQDN_MAX or not _FQDN.fullmatch(fqdn):
        raise Invalid("fqdn", f"{fqdn!r} is not a valid host name")
    return fqdn.lower()


def check_condition(condition: str) -> str:
    if condition not in CONDITIONS:
        raise Invalid("condition", f"must be one of {', '.join(CONDITIONS)}")
    return condition


def check_arch(arch: str) -> str:
    if arch not in ARCHES:
        raise Invalid("arch", f"unknown architecture {arch!r}; known: {', '.join(ARCHES)}")
    return arch


def check_release_action(action: str) -> str:
    if action not in RELEASE_ACTIONS:
        raise Invalid("release_action", f"must be one of {', '.join(RELEASE_ACTIONS)}")
    return action


def check_attributes(attributes: dict) -> dict[str, list[str]]:
    """Attributes map a key to a list of string values; a single value becomes a list."""
    if not isinstance(attributes, dict):
        raise Invalid("attributes", "must be an object of key -> value or list of values")
    cleaned: dict[str, list[str]] = {}
    for key, value in attributes.items():
        values = value if isinstance(value, list) else [value]
        if not all(isinstance(v, (str, int, float, bool)) for v in values):
            raise Invalid(f"attributes.{key}", "values must be strings or numbers")
        cleaned[str(key)] = [str(v) for v in values]
    return cleaned


def refuse_removal(fqdn: str, reservations: list[tuple[int, str]], lent_to: str | None) -> None:
    """Removing a system someone holds or borrows (DELETE, or a change of its condition to removed, by the
    API or an import) is refused unless forced, naming them; forced, their reservations and loan end."""
    held = [f"reservation {ident} of {user}" for ident, user in reservations]
    if lent_to is not None:
        held.append(f"a loan to {lent_to}")
    if held:
        listed = held[0] if len(held) == 1 else f"{', '.join(held[:-1])} and {held[-1]}"
        raise Conflict(f"{fqdn} has {listed}; remove it with force to return them")
