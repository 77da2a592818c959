"""Filter trees (a host's or a distro's requirements, as jobxml normalises them and the scheduler judges them).

A tree is {"and": [...]}, {"or": [...]}, {"not": tree}, {"disk": tree} (one of a host's disks matches the
whole tree) or a leaf {"field", "op", "value"[, "key"]}. Job XML, advance reservations and the scheduler
walk the same trees, so the walk lives here once.
"""
from __future__ import annotations

from collections.abc import Iterator

DISK = "disk"


def leaves(tree: dict | None) -> Iterator[dict]:
    """Every leaf of a tree, in the order written, through and/or/not/disk nodes; none for no tree.

    A stack rather than recursion: the trees come from users, as deep as the XML parser allows."""
    stack = [tree] if tree else []
    while stack:
        node = stack.pop()
        if "field" in node:
            yield node
            continue
        single = node.get("not", node.get(DISK))
        children = node.get("and", node.get("or", [single] if single is not None else []))
        stack.extend(reversed(children))
