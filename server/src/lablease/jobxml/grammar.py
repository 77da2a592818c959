"""The job grammar (job.rng) and the checks made with it.

libxml2's RELAX NG validator is the final word, but its messages inside
`<interleave>` are poor ("Extra element hostRequires in interleave", line 0).
So the same schema is also read into a small table — per element: its
attributes (and their allowed values), its child elements (with how often
each may appear) and whether it holds text — and `explain()` walks a
document with it first, to say exactly which element or attribute is wrong
and on which line. `<choice>` is read loosely (every branch optional); the
conversion and `normalise_job` then say what a combination gets wrong, and
`validate()` catches anything that still slips through.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from importlib import resources

from lxml import etree

from ..domain.errors import Invalid

RNG = "{http://relaxng.org/ns/structure/1.0}"
MANY = 1 << 30


@dataclass
class Attribute:
    required: bool
    values: tuple[str, ...] | None  # None: any text


@dataclass
class Element:
    name: str
    attributes: dict[str, Attribute] = field(default_factory=dict)
    children: dict[str, tuple["Element", int, int]] = field(default_factory=dict)  # name -> (el, min, max)
    text: bool = False


@cache
def schema_document() -> etree._ElementTree:
    data = resources.files(__package__).joinpath("job.rng").read_bytes()
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False, remove_comments=True)
    return etree.ElementTree(etree.fromstring(data, parser))


@cache
def relaxng() -> etree.RelaxNG:
    return etree.RelaxNG(schema_document())


@cache
def root_element() -> Element:
    """The table read from job.rng: the <job> element and, through it, all others."""
    grammar = schema_document().getroot()
    defines = {d.get("name"): d for d in grammar.iter(f"{RNG}define")}
    compiled: dict = {}

    def element(node) -> Element:
        if node not in compiled:
            compiled[node] = result = Element(node.get("name"))
            for child in node:
                walk(child, result, 1, 1)
        return compiled[node]

    def walk(node, into: Element, low: int, high: int) -> None:
        kind = etree.QName(node).localname
        if kind == "element":
            add_child(into, element(node), low, high)
        elif kind == "attribute":
            values = tuple(v.text for v in node.iter(f"{RNG}value")) or None
            if node.find(f"{RNG}ref") is not None:
                values = tuple(v.text for v in defines[node.find(f"{RNG}ref").get("name")].iter(f"{RNG}value"))
            into.attributes[node.get("name")] = Attribute(required=low > 0, values=values)
        elif kind == "text":
            into.text = True
        elif kind == "ref":
            for child in defines[node.get("name")]:
                walk(child, into, low, high)
        else:
            low, high = {
                "optional": (0, high), "zeroOrMore": (0, MANY), "oneOrMore": (low, MANY), "choice": (0, high),
            }.get(kind, (low, high))
            for child in node:
                walk(child, into, low, high)

    def add_child(into: Element, child: Element, low: int, high: int) -> None:
        if child.name in into.children:
            raise ValueError(f"job.rng: <{child.name}> appears twice in <{into.name}>'s content")
        into.children[child.name] = (child, low, high)

    return element(grammar.find(f"{RNG}start/{RNG}element"))


def explain(root) -> None:
    """Raise Invalid naming the line and the problem when `root` breaks the grammar."""
    top = root_element()
    if root.tag != top.name:
        _fail(root, f"the document element must be <{top.name}>, not <{_name(root)}>")
    stack = [(root, top)]
    while stack:
        node, spec = stack.pop()
        _check_attributes(node, spec)
        _check_text(node, spec)
        counts: dict[str, int] = {}
        for child in node:
            if child.tag not in spec.children:
                allowed = ", ".join(sorted(spec.children)) or "no elements"
                _fail(child, f"<{_name(child)}> is not allowed inside <{spec.name}> (allowed here: {allowed})")
            counts[child.tag] = counts.get(child.tag, 0) + 1
            stack.append((child, spec.children[child.tag][0]))
        for name, (_, low, high) in spec.children.items():
            if counts.get(name, 0) < low:
                _fail(node, f"<{spec.name}> needs at least one <{name}>")
            if counts.get(name, 0) > high:
                _fail(node, f"<{name}> may appear only once inside <{spec.name}>")


def _check_attributes(node, spec: Element) -> None:
    # keys() then get(): lxml's attrib.items() is quadratic in the number of attributes.
    for name in node.keys():
        attribute = spec.attributes.get(name)
        if attribute is None:
            allowed = ", ".join(sorted(spec.attributes)) or "none"
            _fail(node, f"<{spec.name}> has no attribute {_name_of(name)!r} (allowed: {allowed})")
        value = node.get(name)
        if attribute.values is not None and value not in attribute.values:
            choices = ", ".join(attribute.values)
            _fail(node, f"<{spec.name}> {name}={value!r} is not allowed; use one of: {choices}")
    for name, attribute in spec.attributes.items():
        if attribute.required and name not in node.attrib:
            _fail(node, f"<{spec.name}> needs a {name}= attribute")


def _check_text(node, spec: Element) -> None:
    if spec.text:
        return
    if (node.text or "").strip() or any((child.tail or "").strip() for child in node):
        _fail(node, f"<{spec.name}> may not contain text (only elements and attributes)")


def validate(root) -> None:
    """The final word: libxml2's RELAX NG validation against job.rng."""
    schema = relaxng()
    if not schema.validate(root):
        error = schema.error_log.last_error
        where = f"line {error.line}: " if error.line else ""
        raise Invalid("job", f"{where}{error.message} (does not match the job schema)")


def _name(node) -> str:
    return _name_of(node.tag)


def _name_of(tag) -> str:
    qname = etree.QName(tag)
    return f"{{{qname.namespace}}}{qname.localname}" if qname.namespace else qname.localname


def _fail(node, reason: str):
    raise Invalid("job", f"line {node.sourceline}: {reason}")
