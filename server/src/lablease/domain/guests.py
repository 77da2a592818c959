"""Guest recipes: the rules for the virtual machines a host recipe's system runs (docs/jobs.md, "Guest recipes").

A guest is placed with its host (never on its own), gets a system record of
its own that nothing else may use, and is installed once its host runs.
"""
from __future__ import annotations

import re

from .errors import Conflict

# QEMU/KVM's locally administered prefix, as Beaker's guests use: a guest's MAC is its system id under it.
MAC_PREFIX = (0x52, 0x54, 0x00)
_NOT_IN_NAME = re.compile(r"[^a-z0-9-]+")
MAX_NAME = 255


def not_for_people(fqdn: str, what: str) -> Conflict:
    """The refusal to reserve, lend or hold a guest recipe's virtual machine: it is its recipe's alone."""
    return Conflict(f"{fqdn} is a guest recipe's virtual machine; it cannot be {what}")


def guest_mac(system_id: int) -> str:
    """The guest's MAC address: unique while fewer than 2**24 guest systems exist."""
    low = system_id % (1 << 24)
    return ":".join(f"{byte:02x}" for byte in (*MAC_PREFIX, low >> 16, (low >> 8) & 0xFF, low & 0xFF))


def guest_system_name(guestname: str | None, recipe_id: int) -> str:
    """The guest system's name: guest-<recipe id>, then its guestname made host-name safe (guestnames repeat
    from job to job; system names are unique)."""
    base = f"guest-{recipe_id}"
    label = _NOT_IN_NAME.sub("-", (guestname or "").lower()).strip("-")
    return f"{base}-{label}"[:MAX_NAME].rstrip("-") if label else base


def guest_arch(tree_arches: list[str], host_arch: str) -> str | None:
    """The arch a guest runs: its host's when a matching distro tree has it, else the first one that has a tree."""
    if host_arch in tree_arches:
        return host_arch
    return sorted(tree_arches)[0] if tree_arches else None


def ending_for_guest(host_status: str) -> str:
    """How a guest still unfinished ends when its host recipe ends: with it (cancelled, aborted), or aborted
    when the host completed first (nothing runs the guest any more)."""
    return host_status if host_status in ("cancelled", "aborted") else "aborted"
