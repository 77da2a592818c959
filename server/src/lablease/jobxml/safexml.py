"""Parsing untrusted XML: hardened lxml, with limits checked as it reads.

No DTD is loaded or accepted, no entity is expanded, nothing is fetched from
the network or the file system. The body must be UTF-8, at most MAX_BYTES;
elements may nest MAX_DEPTH deep and number MAX_ELEMENTS. The limits are
checked while the parser streams, so a hostile document is refused after at
most one small chunk past the limit, never after building it in full.
"""
from __future__ import annotations

import re

from lxml import etree

from ..domain.errors import Invalid

MAX_BYTES = 1024 * 1024
MAX_DEPTH = 64
MAX_ELEMENTS = 10_000
# Each element costs at least 3 bytes ("<a>"), so one chunk adds at most
# ~170 levels: we see MAX_DEPTH + 170 < libxml2's own limit of 256.
_CHUNK = 512

_PARSER_OPTIONS = dict(
    resolve_entities=False,
    no_network=True,
    load_dtd=False,
    dtd_validation=False,
    attribute_defaults=False,
    huge_tree=False,
    remove_comments=True,
    remove_pis=True,
    collect_ids=False,
    encoding="utf-8",  # we checked it is UTF-8; ignore whatever the declaration says
)


class _NothingResolver(etree.Resolver):
    """Answers every external load (DTD subset, entity) with an empty document.

    Needed: with load_dtd=False and no_network=True, libxml2 still reads an
    external DTD subset or parameter entity from a file:// URL. The DOCTYPE
    refusal stops such documents first; this is the second line.
    """

    def resolve(self, url, public_id, context):
        return self.resolve_string("", context)


_PROLOG_ITEM = re.compile(r"\s+|<\?.*?\?>|<!--.*?-->", re.DOTALL)


def parse_untrusted(data, what: str = "job") -> etree._Element:
    """The root element of `data` (bytes), or Invalid("job", what is wrong and where). `what` names the
    document in the refusals (Beaker's hub parses its XML-RPC requests here too: beaker/xmlrpc.py)."""
    if isinstance(data, str):
        data = data.encode("utf-8")
    data = bytes(data)
    if not data.strip():
        raise Invalid("job", "the body is empty; send a <job> XML document")
    if len(data) > MAX_BYTES:
        raise Invalid("job", f"the document is {len(data)} bytes; the limit is {MAX_BYTES} (1 MiB)")
    _refuse_doctype(_utf8(data, what))
    root = _stream(data, what)
    if root.getroottree().docinfo.doctype:
        raise Invalid("job", "DOCTYPE is not allowed (no DTDs and no entity declarations)")
    return root


def _utf8(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise Invalid(
            "job", f"line {line}: not UTF-8 text (byte 0x{data[error.start]:02x} at offset {error.start});"
            f" {what} XML must be encoded as UTF-8") from None


def _refuse_doctype(text: str) -> None:
    position = 1 if text.startswith("\ufeff") else 0
    while (match := _PROLOG_ITEM.match(text, position)) and match.end() > position:
        position = match.end()
    if text[position:position + 9].upper() == "<!DOCTYPE":
        line = text.count("\n", 0, position) + 1
        raise Invalid("job", f"line {line}: DOCTYPE is not allowed (no DTDs and no entity declarations)")


def _stream(data: bytes, what: str) -> etree._Element:
    parser = etree.XMLPullParser(events=("start", "end"), **_PARSER_OPTIONS)
    parser.resolvers.add(_NothingResolver())
    depth = count = 0
    try:
        for offset in range(0, len(data), _CHUNK):
            parser.feed(data[offset:offset + _CHUNK])
            for event, element in parser.read_events():
                if event == "end":
                    depth -= 1
                    continue
                depth, count = depth + 1, count + 1
                if depth > MAX_DEPTH:
                    raise Invalid("job", f"line {element.sourceline}: too deeply nested"
                                  f" (elements may nest at most {MAX_DEPTH} deep)")
                if count > MAX_ELEMENTS:
                    raise Invalid("job", f"line {element.sourceline}: too many elements"
                                  f" (a {what} may have at most {MAX_ELEMENTS})")
        return parser.close()
    except etree.XMLSyntaxError as error:
        raise Invalid("job", _syntax_message(error)) from None


def _syntax_message(error: etree.XMLSyntaxError) -> str:
    entry = error.error_log.last_error if len(error.error_log) else None
    if entry is not None:
        line, column, message = entry.line, entry.column, entry.message
    else:
        (line, column), message = error.position, error.msg
    message = message.strip()
    if "Excessive depth" in message:
        message = f"too deeply nested (elements may nest at most {MAX_DEPTH} deep)"
    return f"line {line}, column {column}: not well-formed XML: {message}"
