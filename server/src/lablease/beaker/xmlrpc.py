"""XML-RPC bodies in and out: parsed through the job XML hardening first, answered as a value or a Fault.

The request body is checked by `jobxml.safexml` (no DTD, no entity, size, depth and element limits, UTF-8)
before the standard library's XML-RPC reader sees it; only a document that passed is decoded.
"""
from __future__ import annotations

import xmlrpc.client
from datetime import datetime

from ..domain.errors import Invalid
from ..jobxml.safexml import parse_untrusted

FAULT_CODE = 1  # Beaker answers every refusal with code 1; bkr prints faultString on one line
CONTENT_TYPES = ("text/xml", "application/xml")


def read_call(data: bytes) -> tuple[str, tuple]:
    """(method name, params) of an XML-RPC request body, or Invalid saying what is wrong with it."""
    if not data.strip():
        raise Invalid("request", "the XML-RPC request body is empty")
    root = parse_untrusted(data, what="XML-RPC request")
    if root.tag != "methodCall":
        raise Invalid("request", f"an XML-RPC request is a <methodCall>, not <{root.tag}>")
    try:
        params, name = xmlrpc.client.loads(data, use_builtin_types=True)
    except Exception as error:  # noqa: BLE001 - the reader's own errors (ResponseError, ExpatError, ValueError...)
        raise Invalid("request", f"not a valid XML-RPC request: {one_line(str(error))}") from None
    if not name:
        raise Invalid("request", "the XML-RPC request names no method")
    return name, params


def answer(value) -> bytes:
    return xmlrpc.client.dumps((plain(value),), methodresponse=True, allow_none=True).encode("utf-8")


def fault(text: str) -> bytes:
    return xmlrpc.client.dumps(xmlrpc.client.Fault(FAULT_CODE, one_line(text)), methodresponse=True,
                               allow_none=True).encode("utf-8")


def plain(value):
    """What XML-RPC can carry: times as Beaker writes them (UTC, 'YYYY-MM-DD HH:MM:SS'), tuples as lists."""
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    if isinstance(value, dict):
        return {str(key): plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        return [plain(item) for item in value]
    return value


def one_line(text: str) -> str:
    return " ".join(str(text).split())
