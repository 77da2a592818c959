"""Host requirements (Beaker's hostRequires) as filter trees that explain their verdicts.

A tree is {"and": [...]}, {"or": [...]}, {"not": t} or a leaf
{"field", "op", "value"[, "key"]}. `verdict(tree, host)` returns
(matches, reason); the reason names the first leaf that ruled the host out,
so a queued recipe can say "7 systems: arch = aarch64".
"""
from __future__ import annotations

import operator
import re
from dataclasses import dataclass, field

OPS = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
       ">=": operator.ge}


@dataclass(frozen=True)
class Host:
    """What filters can see of a system."""

    id: int
    fqdn: str
    arch: str
    memory: int | None = None
    cpu_count: int | None = None
    lab: str | None = None
    attributes: dict = field(default_factory=dict, hash=False)
    pools: frozenset = frozenset()


def describe(leaf: dict) -> str:
    key = f"[{leaf['key']}]" if "key" in leaf else ""
    value = leaf["value"] if leaf["value"] != "" else '""'
    return f"{leaf['field']}{key} {leaf['op']} {value}"


def _like(pattern: str, value: str) -> bool:
    regex = "^" + ".*".join(re.escape(part) for part in str(pattern).split("%")) + "$"
    return re.match(regex, value or "", re.IGNORECASE) is not None


def compare(op: str, actual, wanted) -> bool:
    if op == "like":
        return _like(wanted, "" if actual is None else str(actual))
    if actual is None:
        return op == "!="
    try:
        return OPS[op](actual, wanted)
    except TypeError:
        return False


def _leaf(leaf: dict, host: Host) -> bool:
    name, op, value = leaf["field"], leaf["op"], leaf["value"]
    if name == "pool":
        if value == "":
            return (not host.pools) if op == "=" else bool(host.pools)
        if op == "like":
            return any(_like(value, pool) for pool in host.pools)
        return (value in host.pools) == (op == "=")
    if name == "key_value":
        values = host.attributes.get(leaf["key"], [])
        if op == "!=":  # no value equal to it, compared as `=` compares (so "10" and 10 are equal)
            return not any(compare("=", *_comparable(v, value)) for v in values)
        return any(compare(op, *_comparable(v, value)) for v in values)
    if name == "hostname":
        return compare(op, host.fqdn, value)
    return compare(op, getattr(host, name), value)


def _comparable(actual: str, wanted) -> tuple:
    """Attribute values are text; when both sides are numbers they compare as numbers (10 > 9)."""
    try:
        return float(actual), float(wanted)
    except (TypeError, ValueError):
        return actual, str(wanted)


def verdict(tree: dict | None, host: Host) -> tuple[bool, str | None]:
    """(True, None) when host matches; otherwise (False, the reason)."""
    if not tree:
        return True, None
    if "and" in tree:
        for child in tree["and"]:
            matches, reason = verdict(child, host)
            if not matches:
                return False, reason
        return True, None
    if "or" in tree:
        reasons = []
        for child in tree["or"]:
            matches, reason = verdict(child, host)
            if matches:
                return True, None
            reasons.append(reason)
        return False, " or ".join(r for r in reasons if r) or "none of the alternatives"
    if "not" in tree:
        matches, _ = verdict(tree["not"], host)
        return (False, f"not ({_summary(tree['not'])})") if matches else (True, None)
    return (True, None) if _leaf(tree, host) else (False, describe(tree))


def _summary(tree: dict) -> str:
    if "and" in tree:
        return " and ".join(_summary(t) for t in tree["and"]) or "anything"
    if "or" in tree:
        return " or ".join(_summary(t) for t in tree["or"])
    if "not" in tree:
        return f"not ({_summary(tree['not'])})"
    return describe(tree)


def matches(tree: dict | None, host: Host) -> bool:
    return verdict(tree, host)[0]


def leaves(tree: dict | None):
    """Every leaf of a tree (to check named pools and attribute keys exist)."""
    if not tree:
        return
    for kind in ("and", "or"):
        if kind in tree:
            for child in tree[kind]:
                yield from leaves(child)
            return
    if "not" in tree:
        yield from leaves(tree["not"])
        return
    yield tree


__all__ = ["Host", "verdict", "matches", "leaves", "describe"]
