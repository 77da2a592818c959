"""Rules of the site's directory (LDAP) and Kerberos sign-in, without I/O: filters, names, group changes.

services/auth/directory.py reads the directory and the tickets; what is decided from what it read is here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# RFC 4515 section 3: in a filter's value these stand for themselves only as a backslash and two hex digits.
# The backslash first, so that the escapes made for the others are not escaped again.
_FILTER_SPECIALS = ("\\", "*", "(", ")", "\x00")


def escape_filter_value(value: str) -> str:
    """A value as an LDAP filter must hold it (RFC 4515): `*`, `(`, `)`, `\\` and NUL escaped, so a user
    name such as `*` or `)(uid=*` matches only a person of that very name."""
    for special in _FILTER_SPECIALS:
        value = value.replace(special, f"\\{ord(special):02x}")
    return value


def fill_filter(template: str, **values: str) -> str:
    """A configured filter with its `{username}`/`{dn}` replaced by escaped values, in one pass: a value
    holding `{dn}` stays that text (replacing one placeholder after another would fill it too), and
    braces of the filter that name no value stay as written (str.format would refuse them)."""
    placeholders = re.compile("|".join(re.escape("{" + name + "}") for name in values))
    return placeholders.sub(lambda found: escape_filter_value(values[found.group()[1:-1]]), template)


@dataclass(frozen=True)
class Person:
    """Someone as the directory knows them: their entry, mail, display name and the groups they are in
    ({lablease name: the group's DN})."""

    dn: str
    name: str
    email: str | None
    display_name: str | None
    groups: dict[str, str]


def group_changes(held: set[str], wanted: set[str]) -> tuple[set[str], set[str]]:
    """(to join, to leave): the directory's groups a person must be added to and removed from in lablease.
    `held` is only their directory groups: what lablease's own groups give stays as it is."""
    return wanted - held, held - wanted


def principal_user(principal: str, realms: tuple[str, ...], mapped: tuple[str, ...]) -> str | None:
    """The lablease user name of a Kerberos principal, or None when it maps to nobody.

    An entry of `mapped` (PRINCIPAL=USER) decides first; otherwise a principal of one of `realms` without an
    instance (`alice@REALM`, not `alice/admin@REALM`) is the user of that name. A name from another realm is
    nobody: `alice@OTHER.REALM` is not lablease's alice."""
    for entry in mapped:
        source, _, user = entry.rpartition("=")
        if source == principal:
            return user
    name, _, realm = principal.rpartition("@")
    if not name or realm not in realms or "/" in name:
        return None
    return name
