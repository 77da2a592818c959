"""System conditions, usage states, and what a valid system looks like."""
from __future__ import annotations

import re

from .errors import Conflict, Invalid

CONDITIONS = ("automated", "manual", "broken", "removed")
USAGES = ("idle", "scheduled", "waiting", "installing", "running", "pending")
RELEASE_ACTIONS = ("power_off", "leave_on", "reprovision")
# The architectures a new database starts with; an administrator adds more (store/tables.py Arch).
ARCHES = ("x86_64", "aarch64", "ppc64le", "s390x", "i386", "ppc64", "armhfp", "riscv64")
# An arch name: as Beaker's (x86_64, ppc64le, ia64, armhfp...), one word of at most 16.
ARCH_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.+-]{0,15}$"
_ARCH = re.compile(ARCH_PATTERN)

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


def check_arch(arch: str, known, field: str = "arch") -> str:
    """`arch` when the site knows it (`known`: the arches table's names), else Invalid listing them."""
    if arch not in known:
        raise Invalid(field, f"unknown architecture {arch!r}; known: {', '.join(sorted(known))} (an administrator "
                             "adds one: lablease-server arch add NAME)")
    return arch


def check_arch_name(name) -> str:
    """A new arch's name: one word (letters, digits, _ . + -) of at most 16 characters."""
    if not isinstance(name, str) or not _ARCH.fullmatch(name):
        raise Invalid("name", f"{name!r} is not an architecture name (letters, digits and _ . + -, at most 16, "
                              "starting with a letter or digit)")
    return name


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
