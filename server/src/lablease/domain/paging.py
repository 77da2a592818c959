"""Pages of a list: how many entries a page holds, and the cursor that says where the next one starts.

A cursor is opaque to clients: the last entry's sort key, signed with the site key so that a
garbled or altered one is refused (it would otherwise let a client start a list anywhere, or
make the server compare a time with a name). It names the list it belongs to, so one list's
cursor is refused by another. Keyset, never an offset: rows inserted before the cursor's
position do not shift the next page.
"""
from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from dataclasses import dataclass
from datetime import datetime

from .errors import Invalid

DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
_SIGNATURE_BYTES = 16


@dataclass(frozen=True)
class PageRequest:
    """What a client asked for: at most `limit` entries, after the position `after` names (None: the start)."""

    limit: int = DEFAULT_LIMIT
    after: str | None = None


@dataclass(frozen=True)
class Page:
    """One page of a list, and the cursor of the next one (None on the last page)."""

    items: list
    next_after: str | None = None


def _plain(value):
    if isinstance(value, datetime):
        return {"t": value.isoformat()}
    return value


def _typed(value):
    if isinstance(value, dict):
        return datetime.fromisoformat(value["t"])
    return value


def _signature(key: bytes, scope: str, payload: bytes) -> bytes:
    return hmac.new(key, scope.encode() + b"\0" + payload, hashlib.sha256).digest()[:_SIGNATURE_BYTES]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def encode_cursor(key: bytes, scope: str, values: tuple) -> str:
    """The cursor after the entry whose sort key is `values`, in the list `scope`."""
    payload = json.dumps([_plain(v) for v in values], separators=(",", ":")).encode()
    return _b64(payload) + "." + _b64(_signature(key, scope, payload))


def decode_cursor(key: bytes, scope: str, token: str, width: int) -> tuple:
    """The sort key a cursor of `scope` holds; Invalid("after") for anything this server did not give out."""
    refused = Invalid("after", "is not a cursor this list gave out (garbled, altered, or from another list); "
                               "follow the Link header's next URL, or start again without after")
    payload_text, _, signature_text = token.partition(".")
    try:
        payload, signature = _unb64(payload_text), _unb64(signature_text)
    except (binascii.Error, ValueError):
        raise refused from None
    if not hmac.compare_digest(signature, _signature(key, scope, payload)):
        raise refused
    values = json.loads(payload)
    if not isinstance(values, list) or len(values) != width:
        raise refused  # signed by this site for a list of another shape (a server upgrade changed it)
    return tuple(_typed(v) for v in values)
