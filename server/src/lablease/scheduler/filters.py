"""Host requirements (Beaker's hostRequires) as filter trees that explain their verdicts.

A tree is {"and": [...]}, {"or": [...]}, {"not": t} or a leaf
{"field", "op", "value"[, "key"]}. `verdict(tree, host)` returns
(matches, reason); the reason names the first leaf that ruled the host out,
so a queued recipe can say "7 systems: arch = aarch64".

`user` (who holds the system now) and `loaned` (who it is lent to) are live:
they change while a recipe waits. `possible(tree, host)` treats them as
unknown, for the candidate systems worked out once per requirement class;
`verdict` judges them on a host that carries their current values.
"""
from __future__ import annotations

import operator
import re
from dataclasses import dataclass, field
from datetime import date

from ..domain.filter_trees import DISK, leaves

OPS = {"=": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt,
       ">=": operator.ge}
_DATES = frozenset({"added", "last_inventoried"})
_CPU = "cpu_"  # cpu_vendor -> host.cpu["vendor"] (cpu_count is the system's cpus)
_DISK_FIELD = "disk_"  # disk_size -> disk["size"]
LIVE_FIELDS = frozenset({"user", "loaned"})


@dataclass(frozen=True)
class Host:
    """What filters can see of a system: its record and its inventory (docs/jobs.md, "hostRequires")."""

    id: int
    fqdn: str
    arch: str
    memory: int | None = None
    cpu_count: int | None = None
    lab: str | None = None
    attributes: dict = field(default_factory=dict, hash=False)
    pools: frozenset = frozenset()
    vendor: str | None = None
    model: str | None = None
    serial: str | None = None
    location: str | None = None
    lender: str | None = None
    system_type: str | None = None
    hypervisor: str | None = None  # None: bare metal
    status: str | None = None
    owner: str | None = None
    powertype: str | None = None
    numa_nodes: int | None = None
    added: date | None = None
    last_inventoried: date | None = None
    cpu: dict = field(default_factory=dict, hash=False)
    disks: tuple = ()  # only loaded when a filter needs them (needs_hardware)
    devices: tuple = ()
    # Live (LIVE_FIELDS): filled in only where a tree with live leaves is judged; None: nobody.
    user: str | None = None  # the holder of the reservation in force now
    loaned: str | None = None  # the recipient of the active loan


def describe(leaf: dict) -> str:
    if leaf["field"] == "device":
        return f"device {leaf['op']} " + ", ".join(f"{k}={v}" for k, v in leaf["value"].items())
    key = f"[{leaf['key']}]" if "key" in leaf else ""
    value = leaf["value"] if leaf["value"] != "" else '""'
    return f"{leaf['field']}{key} {leaf['op']} {value}"


def describe_tree(tree: dict | None) -> str | None:
    """A filter tree as one line a person reads: `arch = x86_64 and (memory >= 2048 or key_value[GPU] = yes)`."""
    if not tree:
        return None
    for word in ("and", "or"):
        if word in tree:
            return f" {word} ".join(f"({describe_tree(t)})" if "and" in t or "or" in t else describe_tree(t)
                                    for t in tree[word])
    if "not" in tree:
        return f"not ({describe_tree(tree['not'])})"
    if "field" not in tree:  # a disk's own filter: {"disk": tree}
        return " ".join(f"{key} ({describe_tree(inner)})" for key, inner in tree.items())
    return describe({"op": "=", **tree})


def wanted_words(force: str | None, host_requires: dict | None, distro_requires: dict | None = None) -> str:
    """What a recipe or a waiting reservation asks for, in one line a person reads: the forced system or the host
    requirements, and the distro requirements (`arch = x86_64 and memory >= 4096; distro: distro_name = F-40`)."""
    host = describe_tree(host_requires)
    wanted = (f"system {force}" + (f" ({host})" if host else "")) if force else (host or "any system")
    distro = describe_tree(distro_requires)
    return wanted + (f"; distro: {distro}" if distro else "")


def _like(pattern: str, value: str) -> bool:
    regex = "^" + ".*".join(re.escape(part) for part in str(pattern).split("%")) + "$"
    return re.match(regex, value or "", re.IGNORECASE) is not None


def compare(op: str, actual, wanted) -> bool:
    if op == "like":
        return _like(wanted, "" if actual is None else str(actual))
    if wanted == "" and op in ("=", "!="):  # "" asks whether the field is unset (no hypervisor: bare metal)
        return (actual is None or actual == "") == (op == "=")
    if actual is None:
        return op == "!="
    try:
        return OPS[op](actual, wanted)
    except TypeError:
        return False


def _any_of(op: str, actuals, wanted) -> bool:
    """One of several values (pools, flags, attribute values): != means none is equal."""
    if op == "!=":
        return not any(compare("=", actual, wanted) for actual in actuals)
    return any(compare(op, actual, wanted) for actual in actuals)


def _leaf(leaf: dict, host: Host) -> bool:
    name, op, value = leaf["field"], leaf["op"], leaf["value"]
    if name == "pool":
        if value == "":
            return (not host.pools) if op == "=" else bool(host.pools)
        return _any_of(op, host.pools, value)
    if name == "key_value":
        pairs = [_comparable(v, value) for v in host.attributes.get(leaf["key"], [])]
        if op == "!=":  # no value equal to it, compared as `=` compares (so "10" and 10 are equal)
            return not any(compare("=", *pair) for pair in pairs)
        return any(compare(op, *pair) for pair in pairs)
    if name == "device":
        return _device(op, value, host.devices)
    if name == "cpu_flag":
        return _any_of(op, host.cpu.get("flags") or (), value)
    if name == "auto_prov":
        return (bool(host.powertype) == value) == (op == "=")
    if name in _DATES:
        return _on_day(op, getattr(host, name), value)
    return compare(op, _actual(name, host), value)


def _actual(name: str, host: Host):
    if name == "hostname":
        return host.fqdn
    if hasattr(host, name):
        return getattr(host, name)
    return host.cpu.get(name.removeprefix(_CPU))  # cpu_vendor: the cpu's vendor


def _comparable(actual: str, wanted) -> tuple:
    """Attribute values are text; when both sides are numbers they compare as numbers (10 > 9)."""
    try:
        return float(actual), float(wanted)
    except (TypeError, ValueError):
        return actual, str(wanted)


def _on_day(op: str, actual: date | None, wanted: str) -> bool:
    """Dates compare by day, as Beaker's do: > 2024-01-31 is from February 1st; "" means never."""
    if wanted == "" or actual is None:
        return compare(op, actual, wanted) if wanted == "" else op == "!="
    try:
        return OPS[op](actual, date.fromisoformat(wanted))
    except ValueError:  # a well-formed but impossible date (2024-02-31): no day is it
        return op == "!="


def _device(op: str, wanted: dict, devices) -> bool:
    """= and like: a device matches every given attribute; !=: no device matches them (as with =)."""
    test = "like" if op == "like" else "="

    def fits(device: dict) -> bool:
        return all(compare(test, str(device.get(key) or "").lower() or None, str(value).lower())
                   for key, value in wanted.items())

    found = any(fits(device) for device in devices)
    return not found if op == "!=" else found


def _disk_leaf(leaf: dict, disk: dict) -> bool:
    return compare(leaf["op"], disk.get(leaf["field"][len(_DISK_FIELD):]), leaf["value"])


def verdict(tree: dict | None, host: Host) -> tuple[bool, str | None]:
    """(True, None) when host matches; otherwise (False, the reason)."""
    return _verdict(tree, host, _leaf)


def _verdict(tree: dict | None, subject, leaf_test) -> tuple[bool, str | None]:
    if not tree:
        return True, None
    if "and" in tree:
        for child in tree["and"]:
            matches, reason = _verdict(child, subject, leaf_test)
            if not matches:
                return False, reason
        return True, None
    if "or" in tree:
        reasons = []
        for child in tree["or"]:
            matches, reason = _verdict(child, subject, leaf_test)
            if matches:
                return True, None
            reasons.append(reason)
        return False, " or ".join(r for r in reasons if r) or "none of the alternatives"
    if "not" in tree:
        matches, _ = _verdict(tree["not"], subject, leaf_test)
        return (False, f"not ({_summary(tree['not'])})") if matches else (True, None)
    if DISK in tree:
        if any(_verdict(tree[DISK], disk, _disk_leaf)[0] for disk in subject.disks):
            return True, None
        return False, f"no disk with {_summary(tree[DISK])}"
    return (True, None) if leaf_test(tree, subject) else (False, describe(tree))


def _summary(tree: dict) -> str:
    if "and" in tree:
        return " and ".join(_summary(t) for t in tree["and"]) or "anything"
    if "or" in tree:
        return " or ".join(_summary(t) for t in tree["or"])
    if "not" in tree:
        return f"not ({_summary(tree['not'])})"
    if DISK in tree:
        return f"disk ({_summary(tree[DISK])})"
    return describe(tree)


def possible(tree: dict | None, host: Host) -> bool:
    """Whether the host may match, whatever the live leaves turn out to be (three-valued logic: a live leaf
    is unknown, `not` of unknown is unknown), so a candidate list holds every system that may ever suit."""
    return _maybe(tree, host) is not False


def _maybe(tree: dict | None, host: Host) -> bool | None:
    if not tree:
        return True
    for kind, decisive in (("and", False), ("or", True)):
        if kind in tree:
            found = [_maybe(child, host) for child in tree[kind]]
            return decisive if decisive in found else None if None in found else not decisive
    if "not" in tree:
        inner = _maybe(tree["not"], host)
        return None if inner is None else not inner
    if DISK not in tree and tree["field"] in LIVE_FIELDS:
        return None
    return _verdict(tree, host, _leaf)[0]


def is_live(tree: dict | None) -> bool:
    """Whether the tree has a live leaf (then placing a recipe checks it against the system's holder and loan)."""
    return any(leaf["field"] in LIVE_FIELDS for leaf in leaves(tree))


def matches(tree: dict | None, host: Host) -> bool:
    return verdict(tree, host)[0]


def needs_hardware(tree: dict | None) -> bool:
    """Whether the tree looks at disks or devices (only then are they loaded)."""
    stack = [tree] if tree else []
    while stack:
        node = stack.pop()
        if DISK in node or node.get("field") == "device":
            return True
        stack.extend(node.get("and", node.get("or", [node["not"]] if "not" in node else [])))
    return False


__all__ = ["Host", "verdict", "possible", "is_live", "matches", "leaves", "describe", "describe_tree",
           "wanted_words", "needs_hardware"]
