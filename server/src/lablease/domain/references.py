"""Deleting what others still name (a pool a health check runs on, a group access rules grant to).

Deleting it would silently change them: rules dropped, a pool left without the group that manages it, a
check with nothing to run on. So such a delete is refused (409) with every reference named, unless forced;
a forced delete changes each of them and says what it changed (docs/access.md, "Deleting a pool or group").
"""
from __future__ import annotations

from .errors import Conflict


def check_unreferenced(what: str, references: list[str], force: bool, forcing: str) -> None:
    """Refuse deleting `what` while `references` name it, unless `force`; `forcing` says what force would do."""
    if references and not force:
        raise Conflict(f"{what} is still named by {'; '.join(references)}; delete with force=true to {forcing}",
                       references=references)
