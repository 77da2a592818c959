"""Idempotency keys: a writing request sent again with its key gets the first answer, never a second object.

What a key may be, how two requests are compared and what differs between them are decided here
(pure: no I/O, no clock). The API looks the key up and keeps the answer (api/app.py,
services/records/idempotency.py); docs/api.md, "Retrying a write", is the user's side of it.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass

from .errors import Conflict, Invalid

HEADER = "Idempotency-Key"
REPLAYED = "Idempotent-Replayed"  # on an answer that is the stored one, sent again
MAX_KEY = 128


class IdempotencyKeyReused(Conflict):
    """409 `urn:lablease:problem:idempotency-key-reused`: the key was used for another request."""


@dataclass(frozen=True)
class Asked:
    """One request as a key remembers it: its method, path (with the query string) and body's hash."""

    method: str
    path: str
    body_hash: str


KEY = re.compile(r"[!-~]{1,%d}" % MAX_KEY)  # visible ASCII: a header's value as sent, nothing a proxy trims


def check_key(key: str) -> str:
    """The key as sent, or 422: 1 to 128 visible ASCII characters (no space: it is a header's value)."""
    if not KEY.fullmatch(key):
        others = any(not "!" <= c <= "~" for c in key)
        raise Invalid(HEADER, f"an idempotency key is 1 to {MAX_KEY} visible ASCII characters (no space), not "
                              f"{len(key)} characters{' with others' if others else ''}")
    return key


def body_hash(data: bytes, is_json: bool) -> str:
    """sha256 of the body; a JSON body in one spelling (key order and spaces do not make it another request)."""
    if is_json:
        data = json.dumps(json.loads(data) if data.strip() else {}, sort_keys=True, separators=(",", ":")).encode()
    return hashlib.sha256(data).hexdigest()


def differences(first: Asked, again: Asked) -> list[str]:
    """What the request sent again asks differently from the one that first used its key."""
    found = []
    if (first.method, first.path) != (again.method, again.path):
        found.append(f"method and path (first {first.method} {first.path}, now {again.method} {again.path})")
    if first.body_hash != again.body_hash:
        found.append("body")
    return found


def refuse_reused(key: str, differs: list[str]) -> None:
    """409 naming what differs, when anything does."""
    if differs:
        raise IdempotencyKeyReused(f"{HEADER} {key!r} was already used for another request, which differs in "
                                   f"{'; '.join(differs)}: use a new key for a different request", differs=differs)


def own_request_id(given, key: str):
    """A route with its own request_id (reserve, job submission) takes the key as that id; both given must agree."""
    if given is not None and given != key:
        raise Invalid(HEADER, f"{key!r} differs from the request_id {given!r} of the same request; send one of them, "
                              "or both alike")
    return key
