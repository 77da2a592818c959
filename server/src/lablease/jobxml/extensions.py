"""Extension elements: XML of another namespace directly inside <job>, kept with the job, not acted on.

Beaker (since release 22) accepts any element in a namespace of its own at
the top of a job (`<b:option xmlns:b="http://example.com/bar">`), stores it
and writes it back when the job is cloned or exported; tools that generate
jobs keep their metadata there. lablease does the same: each element is
taken out of the document before the grammar sees it and kept, as its XML
text, in the JSON form's `extensions` (one warning each says it is kept).
"""
from __future__ import annotations

from lxml import etree

from ..domain.errors import Invalid
from .safexml import parse_untrusted

EXPLAINED = ("must be one XML element in a namespace of its own (e.g. <b:option xmlns:b=\"http://example.com/b\">"
             "...</b:option>), as Beaker's extension elements are")


def take_extensions(root) -> list[str]:
    """Remove the namespaced children of <job> from `root`; their XML text, in document order."""
    taken = []
    for child in list(root):
        if isinstance(child.tag, str) and etree.QName(child).namespace:
            taken.append(_text(child))
            _remove_keeping_tail(child)
    return taken


def normalised(text) -> str:
    """The extension as one namespaced element, written canonically; ValueError saying why it is not one."""
    if not isinstance(text, str):
        raise ValueError(EXPLAINED)
    try:
        element = parse_untrusted(text.encode("utf-8"))
    except Invalid as error:
        raise ValueError(f"{EXPLAINED}: {error.extra['reason']}") from None
    if not etree.QName(element).namespace:
        raise ValueError(f"{EXPLAINED}: <{element.tag}> has no namespace")
    return _text(element)


def element_of(text: str):
    """The element a normalised extension holds (for writing it back into a document)."""
    return parse_untrusted(text.encode("utf-8"))


def qualified_name(text: str) -> str:
    """{namespace}name, as the grammar names elements of other namespaces."""
    qname = etree.QName(element_of(text))
    return f"{{{qname.namespace}}}{qname.localname}"


def _text(element) -> str:
    return etree.tostring(element, encoding="unicode", with_tail=False)


def _remove_keeping_tail(element) -> None:
    """Remove `element`; the text after it (white space between elements) stays where it was."""
    parent, tail = element.getparent(), element.tail
    previous = element.getprevious()
    if tail:
        if previous is not None:
            previous.tail = (previous.tail or "") + tail
        else:
            parent.text = (parent.text or "") + tail
    parent.remove(element)
