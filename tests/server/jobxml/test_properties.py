"""Property-based: any valid job survives render -> parse unchanged; no input crashes the parser."""
import re
import string

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lablease.domain.errors import Invalid
from lablease.domain.limits import SPACE
from lablease.jobxml import normalise_job, parse_job_xml, render_job_xml
from lablease.jobxml import fields

from .jobs import MULTIHOST

SETTINGS = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# Any text XML 1.0 can carry: no C0 controls but tab, newline and carriage return; no surrogates.
xml_text = st.text(
    st.characters(exclude_categories=("Cs", "Cc"), exclude_characters="\ufffe\uffff") | st.sampled_from("\t\n\r "),
    max_size=12,
)
# A name has no white space at its edges, as the schema reads it (limits.SPACE: U+FEFF is one, for instance).
EDGE = "".join(char for char in map(chr, range(0x10000)) if re.fullmatch(f"[{SPACE}]", char))
names = xml_text.map(lambda text: text.strip(EDGE)).filter(lambda text: text != "")
# ks_meta is checked at submission (it must parse as key=value words, each on one line).
ks_meta_text = st.lists(st.from_regex(r"!?[a-z_][a-z0-9_]{0,6}(=[A-Za-z0-9_.:/-]{0,8})?", fullmatch=True),
                        max_size=4).map(" ".join)
numbers = st.integers(min_value=0, max_value=2**63 - 1)


def leaves(field_ops: dict):
    def leaf(field: str):
        ops = field_ops[field]
        op = st.sampled_from(ops + (("==",) if "=" in ops else ()))
        value = {
            "number": numbers, "bytes": numbers, "key_value": xml_text | numbers, "boolean": st.booleans(),
            "real": numbers | st.floats(0, 10**6, allow_nan=False).map(lambda x: round(x, 3)),
            "date": st.dates().map(lambda day: f"{day:%Y-%m-%d}").filter(lambda text: len(text) == 10) | st.just(""),
            "device": st.dictionaries(st.sampled_from(fields.DEVICE_KEYS), xml_text, min_size=1, max_size=3),
        }.get(fields.VALUE_KINDS.get(field), xml_text)
        base = st.fixed_dictionaries({"field": st.just(field), "op": op, "value": value})
        if field == "key_value":
            return st.builds(lambda leaf, key: {**leaf, "key": key}, base, names)
        return base

    return st.sampled_from(sorted(field_ops)).flatmap(leaf)


def trees(field_ops: dict, base=None):
    return st.recursive(
        leaves(field_ops) if base is None else base,
        lambda children: st.one_of(
            st.lists(children, max_size=4).map(lambda items: {"and": items}),
            st.lists(children, max_size=4).map(lambda items: {"or": items}),
            children.map(lambda child: {"not": child}),
        ),
        max_leaves=16,
    )


disk_trees = trees(fields.DISK_FIELD_OPS)
host_trees = trees(fields.HOST_FIELD_OPS, leaves(fields.HOST_FIELD_OPS) | disk_trees.map(lambda t: {"disk": t}))
distro_trees = trees(fields.DISTRO_FIELD_OPS)

recipes = st.fixed_dictionaries(
    {"host_requires": st.none() | host_trees, "distro_requires": st.none() | distro_trees},
    optional={
        "whiteboard": xml_text,
        "ks_meta": ks_meta_text,
        "autopick": st.fixed_dictionaries({}, optional={
            "random": st.booleans(), "pools": st.lists(names, max_size=3, unique=True)}),
        "reservesys": st.none() | st.fixed_dictionaries({}, optional={
            "onabort": st.booleans(), "onfail": st.booleans(), "onwarn": st.booleans(), "onpass": st.booleans(),
            "duration": st.integers(1, 10**6)}),
        "runtime_limit": st.none() | st.integers(1, 10**6) | st.sampled_from(["4h", "PT30M", "1:30:00", "2d"]),
        "tasks": st.lists(st.fixed_dictionaries({"name": names}, optional={
            "role": names, "params": st.dictionaries(names, xml_text, max_size=3)}), max_size=3),
    },
)
jobs = st.fixed_dictionaries(
    {"recipe_sets": st.lists(st.fixed_dictionaries(
        {"recipes": st.lists(recipes, min_size=1, max_size=3)},
        optional={"priority": st.sampled_from(fields.PRIORITIES), "ar": st.none() | st.integers(1, 10**9)},
    ), min_size=1, max_size=2)},
    optional={"whiteboard": xml_text, "group": st.none() | names},
)


@SETTINGS
@given(host_trees, distro_trees)
def test_filter_trees_survive_render_and_parse(host_tree, distro_tree):
    job = normalise_job({"recipe_sets": [{"recipes": [{"host_requires": host_tree, "distro_requires": distro_tree}]}]})
    assert parse_job_xml(render_job_xml(job)) == job


@SETTINGS
@given(jobs)
def test_whole_jobs_survive_render_and_parse(job):
    normal = normalise_job(job)
    assert normalise_job(normal) == normal
    assert parse_job_xml(render_job_xml(job)) == normal


@SETTINGS
@given(st.binary(max_size=300))
def test_random_bytes_are_refused_cleanly(data):
    try:
        parse_job_xml(data)
    except Invalid as error:
        assert error.field == "job" and error.extra["reason"]


@SETTINGS
@given(st.integers(0, len(MULTIHOST) - 1), st.integers(1, 40), st.sampled_from(["cut", "delete", "insert"]),
       st.text(string.printable, min_size=1, max_size=5))
def test_damaged_jobs_are_refused_cleanly_or_still_read(position, length, damage, junk):
    if damage == "cut":
        data = MULTIHOST[:position]
    elif damage == "delete":
        data = MULTIHOST[:position] + MULTIHOST[position + length:]
    else:
        data = MULTIHOST[:position] + junk.encode() + MULTIHOST[position:]
    try:
        assert parse_job_xml(data)["recipe_sets"]
    except Invalid as error:
        assert error.field == "job" and error.extra["reason"]


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                       max_size=3), max_leaves=6)


def _places(node, path=()):
    """Every (path) of a JSON document: where a value can be replaced."""
    yield path
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in items:
        yield from _places(child, path + (key,))


def _replaced(node, path, value):
    if not path:
        return value
    copy = dict(node) if isinstance(node, dict) else list(node)
    copy[path[0]] = _replaced(node[path[0]], path[1:], value)
    return copy


@SETTINGS
@given(jobs, st.data())
def test_the_compiled_job_check_never_takes_what_jsonschema_refuses(job, data):
    """normalise checks a job with the compiled (Rust) validator first and takes it when that says valid: it must
    agree with jsonschema on valid jobs, and never say valid where jsonschema finds an error (any value of a
    job replaced by any JSON value, text with lone surrogates too)."""
    from lablease.jobxml.normalise import _quickly_valid, _validator

    assert _quickly_valid(job) and not list(_validator().iter_errors(job))
    damaged = _replaced(job, data.draw(st.sampled_from(list(_places(job)))), data.draw(json_values))
    assert not _quickly_valid(damaged) or not list(_validator().iter_errors(damaged))
