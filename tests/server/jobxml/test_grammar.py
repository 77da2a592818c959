"""job.rng, fields.py and docs/jobs.md agree."""
import re
from pathlib import Path

from lxml import etree

from lablease.jobxml import fields, grammar

DOCS = Path(__file__).resolve().parents[3] / "docs" / "jobs.md"


def children_of(*path: str) -> set[str]:
    element = grammar.root_element()
    for name in path:
        element = element.children[name][0]
    return set(element.children)


def test_the_schema_compiles_with_libxml2():
    schema = grammar.relaxng()
    assert schema.validate(etree.fromstring("<job><recipeSet><recipe/></recipeSet></job>"))
    assert not schema.validate(etree.fromstring("<job><recipeSet><colour/></recipeSet></job>"))


def test_host_filter_elements_match_the_field_table():
    branches = set(fields.BRANCHES)
    assert children_of("recipeSet", "recipe", "hostRequires") == \
        branches | set(fields.HOST_ELEMENTS) | set(fields.HOST_WRAPPERS) | {fields.DISK}
    assert children_of("recipeSet", "recipe", "hostRequires", "system") == \
        branches | set(fields.SYSTEM_ELEMENTS)
    assert children_of("recipeSet", "recipe", "hostRequires", "cpu") == branches | set(fields.CPU_ELEMENTS)
    assert children_of("recipeSet", "recipe", "hostRequires", "disk") == branches | set(fields.DISK_ELEMENTS)
    assert children_of("recipeSet", "recipe", "hostRequires", "and") == children_of("recipeSet", "recipe", "hostRequires")


def test_distro_filter_elements_match_the_field_table():
    distro_requires = set(fields.BRANCHES) | set(fields.DISTRO_ELEMENTS) | set(fields.DISTRO_WRAPPERS)
    assert children_of("recipeSet", "recipe", "distroRequires") == distro_requires
    assert children_of("recipeSet", "recipe", "distroRequires", "distro") == distro_requires


def test_leaf_operators_match_the_field_table():
    host = grammar.root_element().children["recipeSet"][0].children["recipe"][0].children["hostRequires"][0]
    for element, field in fields.HOST_ELEMENTS.items():
        allowed = set(host.children[element][0].attributes["op"].values)
        assert allowed == set(fields.HOST_FIELD_OPS[field]) | {"=="}, element


def test_every_element_and_attribute_of_the_schema_is_documented():
    text = DOCS.read_text()
    schema = grammar.schema_document().getroot()
    rng = "{http://relaxng.org/ns/structure/1.0}"
    for element in schema.iter(f"{rng}element"):
        assert f"<{element.get('name')}" in text, element.get("name")
    for attribute in schema.iter(f"{rng}attribute"):
        assert f"{attribute.get('name')}=" in text, attribute.get("name")


def test_every_filter_field_and_op_is_documented():
    text = DOCS.read_text()
    for field in fields.HOST_FIELDS + fields.DISK_FIELDS + fields.DISTRO_FIELDS:
        assert f"`{field}`" in text, field
    for op in fields.ALL_OPS:
        assert f"`{op}`" in text, op


def test_the_example_job_in_the_docs_is_valid():
    from lablease.jobxml import parse_job_xml

    text = DOCS.read_text()
    examples = re.findall(r"```xml\n(.*?)```", text, re.DOTALL)
    assert examples
    for example in examples:
        if example.lstrip().startswith("<job"):
            assert parse_job_xml(example.encode())


def test_the_schema_file_itself_is_plain():
    # no DOCTYPE or external references in what we ship
    data = (Path(grammar.__file__).parent / "job.rng").read_bytes()
    assert b"<!DOCTYPE" not in data and b"externalRef" not in data and b"include" not in data
    assert etree.fromstring(data).tag.endswith("grammar")


def test_the_json_in_the_docs_is_the_normal_form_of_the_xml_example():
    import json

    from lablease.jobxml import normalise_job, parse_job_xml

    text = DOCS.read_text()
    xml = next(e for e in re.findall(r"```xml\n(.*?)```", text, re.DOTALL) if e.lstrip().startswith("<?xml"))
    shown = json.loads(re.findall(r"```json\n(.*?)```", text, re.DOTALL)[0])
    assert parse_job_xml(xml.encode()) == shown == normalise_job(shown)
