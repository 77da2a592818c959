"""<guestrecipe>: the grammar, the JSON form, the round trip, and the corpus of guest-recipe jobs."""
from pathlib import Path

import pytest

from lablease.domain.errors import Invalid
from lablease.jobxml import grammar, normalise_job, parse_job_xml, render_job_xml

CORPUS = sorted((Path(__file__).parent / "corpus").glob("guest-*.xml"))
DISTRO = '<distroRequires><distro_name op="=" value="F40"/></distroRequires>'


def job(guests: str, host: str = "") -> bytes:
    return f"<job><recipeSet><recipe>{host}\n{guests}\n</recipe></recipeSet></job>".encode()


def test_a_guest_recipe_has_exactly_the_contents_of_a_recipe():
    recipe = grammar.root_element().children["recipeSet"][0].children["recipe"][0]
    guest = recipe.children["guestrecipe"][0]
    assert set(guest.children) == set(recipe.children) - {"guestrecipe"}
    assert set(guest.attributes) == set(recipe.attributes) | {"guestname", "guestargs"}
    # both optional, as Beaker's server takes them (its schema still asks for guestargs=)
    assert not guest.attributes["guestargs"].required and not guest.attributes["guestname"].required


def test_a_guest_recipe_with_every_child_is_read_into_its_hosts_guests():
    parsed = parse_job_xml(job(f'''
      <guestrecipe guestname="vm1" guestargs="--ram=1024" whiteboard="g" ks_meta="a=b" kernel_options="quiet"
                   runtime_limit="2h" role="CLIENTS">
        <autopick random="true"><pool>p</pool></autopick>{DISTRO}
        <hostRequires><arch op="=" value="x86_64"/></hostRequires>
        <reservesys duration="1h"/><watchdog panic="ignore"/>
        <task name="/t" role="CLIENTS"><params><param name="A" value="1"/></params></task>
      </guestrecipe>
      <guestrecipe guestargs="">{DISTRO}<hostRequires/><task name="/u"/></guestrecipe>''', DISTRO))
    host = parsed["recipe_sets"][0]["recipes"][0]
    first, second = host["guests"]
    assert (first["guestname"], first["guestargs"], second["guestname"], second["guestargs"]) == \
        ("vm1", "--ram=1024", None, "")
    assert first["runtime_limit"] == 7200 and first["reservesys"]["duration"] == 3600
    assert first["autopick"] == {"random": True, "pools": ["p"]}
    assert first["tasks"] == [{"name": "/t", "role": "CLIENTS", "params": {"A": "1"}}]
    assert (first["ks_meta"], first["kernel_options"], first["whiteboard"]) == ("a=b", "quiet", "g")
    assert "guests" not in first and host["tasks"] == []
    assert parse_job_xml(render_job_xml(parsed)) == parsed == normalise_job(parsed)


def test_a_recipe_without_guests_has_no_guests_key():
    assert "guests" not in parse_job_xml(job("", DISTRO))["recipe_sets"][0]["recipes"][0]


@pytest.mark.parametrize("guests, expected", [
    (f'<guestrecipe guestargs="">\n<guestrecipe guestargs="">{DISTRO}</guestrecipe></guestrecipe>',
     "line 3: <guestrecipe> is not allowed inside <guestrecipe>"),
    ('<guestrecipe guestargs="">\n<task name="/t"/></guestrecipe>',
     "line 2: <guestrecipe> distro_requires: a guest recipe needs distro requirements"),
    (f'<guestrecipe guestargs="" colour="red">{DISTRO}</guestrecipe>', "line 2: <guestrecipe> has no attribute 'colour'"),
    (f'<guestrecipe guestargs="">{DISTRO}\n<recipe/></guestrecipe>', "line 3: <recipe> is not allowed inside <guestrecipe>"),
    (f'<guestrecipe guestargs="" runtime_limit="soon">{DISTRO}</guestrecipe>', "line 2: <guestrecipe> runtime_limit"),
])
def test_bad_guest_recipes_name_their_line(guests, expected):
    with pytest.raises(Invalid) as error:
        parse_job_xml(job(guests))
    assert expected in str(error.value)


def test_the_json_form_refuses_a_guest_with_guests_and_takes_one_without_guestargs():
    distro = {"field": "distro_name", "op": "=", "value": "F40"}
    with pytest.raises(Invalid) as error:
        normalise_job({"recipe_sets": [{"recipes": [{"guests": [{"distro_requires": distro, "guests": []}]}]}]})
    assert error.value.field.startswith("recipe_sets[0].recipes[0].guests[0]")
    job = normalise_job({"recipe_sets": [{"recipes": [{"guests": [{"distro_requires": distro}]}]}]})
    assert job["recipe_sets"][0]["recipes"][0]["guests"][0]["guestargs"] == ""


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.name)
def test_the_corpus_of_guest_recipe_jobs_is_accepted_and_survives_a_round_trip(path):
    parsed = parse_job_xml(path.read_bytes())
    assert any(recipe.get("guests") for rs in parsed["recipe_sets"] for recipe in rs["recipes"])
    assert parse_job_xml(render_job_xml(parsed)) == parsed


def test_what_a_guest_says_about_where_it_runs_is_a_warning_naming_its_path():
    from lablease.jobxml.warnings import job_warnings
    parsed = parse_job_xml(job(f'''
      <guestrecipe guestargs="" role="CLIENTS">
        <autopick><pool>p</pool></autopick>{DISTRO}
        <hostRequires force="box1"/><reservesys/>
      </guestrecipe>''', DISTRO))
    found = {w["path"]: w["message"] for w in job_warnings(parsed)}
    guest = "/job/recipeSet[1]/recipe[1]/guestrecipe[1]"
    assert {f"{guest}/@role", f"{guest}/autopick", f"{guest}/hostRequires/@force", f"{guest}/reservesys"} <= set(found)
    assert "host recipe's system" in found[f"{guest}/autopick"]
    assert not any(path.startswith(guest) for path in
                   (w["path"] for w in job_warnings(parse_job_xml(job(f'<guestrecipe guestargs="">{DISTRO}</guestrecipe>', DISTRO)))))
