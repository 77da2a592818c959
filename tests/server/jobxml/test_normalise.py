"""The JSON form: defaults, spellings, and errors that name the JSON path."""
import copy

import jsonschema
import pytest

from lablease.domain.errors import Invalid
from lablease.jobxml import JOB_SCHEMA, normalise_job

from .jobs import MULTIHOST_JSON


def one_recipe(**recipe) -> dict:
    return {"recipe_sets": [{"recipes": [recipe]}]}


def normal_recipe(**recipe) -> dict:
    return normalise_job(one_recipe(**recipe))["recipe_sets"][0]["recipes"][0]


def error_of(data) -> Invalid:
    with pytest.raises(Invalid) as error:
        normalise_job(data)
    return error.value


def test_the_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(JOB_SCHEMA)


def test_defaults_are_filled():
    assert normalise_job(one_recipe()) == {
        "whiteboard": "", "group": None, "retention_tag": None, "product": None, "notify": {"cc": []},
        "recipe_sets": [{"priority": "Normal", "ar": None, "recipes": [{
            "whiteboard": "", "host_requires": None, "force": None, "distro_requires": None,
            "autopick": {"random": False, "pools": []}, "reservesys": None, "runtime_limit": None,
            "ks_meta": "", "kernel_options": "", "kernel_options_post": "", "role": None, "watchdog": None,
            "distro": None, "kickstart": None, "packages": [], "ks_appends": [], "repos": [], "partitions": [],
            "tasks": [],
        }]}],
    }


def test_normalising_twice_changes_nothing_and_leaves_the_input_alone():
    submitted = copy.deepcopy(MULTIHOST_JSON)
    once = normalise_job(submitted)
    assert normalise_job(once) == once
    assert submitted == MULTIHOST_JSON


def test_spellings_are_made_canonical():
    recipe = normal_recipe(
        host_requires={"and": [
            {"field": "arch", "op": "==", "value": "x86_64"},
            {"field": "key_value", "key": "DISKS", "op": ">=", "value": 2},
            {"field": "pool", "value": ""},
        ]},
        runtime_limit="1:30:00",
        reservesys={"when": "onwarn", "duration": "PT2H"},
        tasks=[{"name": "/a"}],
    )
    assert recipe["host_requires"] == {"and": [
        {"field": "arch", "op": "=", "value": "x86_64"},
        {"field": "key_value", "key": "DISKS", "op": ">=", "value": "2"},
        {"field": "pool", "op": "=", "value": ""},
    ]}
    assert recipe["runtime_limit"] == 5400
    assert recipe["reservesys"] == {"onabort": True, "onfail": True, "onwarn": True, "onpass": False, "duration": 7200}
    assert recipe["tasks"] == [{"name": "/a", "role": "STANDALONE", "params": {}}]


def test_reservesys_flags_default_true_and_duration_a_day():
    assert normal_recipe(reservesys={})["reservesys"] == {
        "onabort": True, "onfail": True, "onwarn": True, "onpass": True, "duration": 86400}
    assert normal_recipe(reservesys={"onpass": False})["reservesys"]["onpass"] is False


@pytest.mark.parametrize("data, field, reason", [
    ([], "job", "must be a JSON object"),
    ({}, "job", "'recipe_sets' is a required property"),
    ({"recipe_sets": []}, "recipe_sets", "needs at least one item"),
    ({"recipe_sets": [{"recipes": []}]}, "recipe_sets[0].recipes", "needs at least one item"),
    ({"recipe_sets": [{"recipes": [{}]}], "owner": "me"}, "job", "('owner' was unexpected)"),
    ({"recipe_sets": [{"recipes": [{}], "priority": "high"}]}, "recipe_sets[0].priority", "'high' is not one of: Low,"),
    ({"recipe_sets": [{"recipes": [{}], "ar": "42"}]}, "recipe_sets[0].ar", "'42' is not a whole number"),
    (one_recipe(host_requires={"field": "memory", "value": "lots"}),
     "recipe_sets[0].recipes[0].host_requires.value", "'lots' is not a whole number"),
    (one_recipe(host_requires={"and": [{"field": "cpu_count", "op": ">", "value": True}]}),
     "recipe_sets[0].recipes[0].host_requires.and[0].value", "True is not a whole number"),
    (one_recipe(host_requires={"or": [{"field": "colour", "value": "red"}]}),
     "recipe_sets[0].recipes[0].host_requires.or[0].field", "'colour' is not one of: hostname,"),
    (one_recipe(host_requires={"not": {"field": "arch", "op": ">", "value": "x"}}),
     "recipe_sets[0].recipes[0].host_requires.not.op", "'>' is not one of: =, !=, like"),
    (one_recipe(host_requires={"field": "pool", "op": "like", "value": "p%"}),
     "recipe_sets[0].recipes[0].host_requires.op", "'like' is not one of: =, !=, =="),
    (one_recipe(host_requires={"field": "key_value", "value": "x"}),
     "recipe_sets[0].recipes[0].host_requires", "'key' is a required property"),
    (one_recipe(host_requires={"field": "arch", "key": "K", "value": "x"}),
     "recipe_sets[0].recipes[0].host_requires", "key is only allowed when field is key_value"),
    (one_recipe(host_requires={"and": [], "or": []}),
     "recipe_sets[0].recipes[0].host_requires", "('or' was unexpected)"),
    (one_recipe(host_requires={"and": {"field": "arch", "value": "x"}}),
     "recipe_sets[0].recipes[0].host_requires.and", "is not of type 'array'"),
    (one_recipe(distro_requires={"field": "memory", "value": 1}),
     "recipe_sets[0].recipes[0].distro_requires.field", "'memory' is not one of: distro_name,"),
    (one_recipe(force="a.example.com", host_requires={"and": []}),
     "recipe_sets[0].recipes[0].force", "cannot be combined with host requirements"),
    (one_recipe(reservesys={"when": "onfail", "onpass": True}),
     "recipe_sets[0].recipes[0].reservesys", "give either when= or the flags"),
    (one_recipe(reservesys={"duration": "soon"}),
     "recipe_sets[0].recipes[0].reservesys.duration", "'soon' is not a duration"),
    (one_recipe(reservesys={"duration": 0}), "recipe_sets[0].recipes[0].reservesys.duration",
         "0 is too small (at least 1)"),
    (one_recipe(runtime_limit="P1M"), "recipe_sets[0].recipes[0].runtime_limit", "no fixed length"),
    (one_recipe(autopick={"pools": ["a", "a"]}), "recipe_sets[0].recipes[0].autopick.pools", "the same name twice"),
    (one_recipe(autopick={"pools": [""]}), "recipe_sets[0].recipes[0].autopick.pools[0]", "must not be empty"),
    (one_recipe(whiteboard="bell\x07"), "recipe_sets[0].recipes[0].whiteboard", "control character"),
    (one_recipe(tasks=[{"name": "/a", "params": {"N": 1}}]), "recipe_sets[0].recipes[0].tasks[0].params.N",
     "1 is not of type 'string'"),
    (one_recipe(tasks=[{"role": "SERVERS"}]), "recipe_sets[0].recipes[0].tasks[0]", "a task needs a name or a fetch URL"),
    ({"recipe_sets": [{"recipes": [{}]}], "group": ""}, "group", "must not be empty"),
    (one_recipe(force=" a.example.com"), "recipe_sets[0].recipes[0].force", "must not begin or end with white space"),
])
def test_errors_name_the_json_path(data, field, reason):
    error = error_of(data)
    assert error.field == field
    assert reason in error.extra["reason"]


def test_deep_or_huge_json_is_refused_before_schema_validation():
    tree = {"field": "arch", "value": "x"}
    for _ in range(5000):  # deeper than jsonschema (or Python) could recurse
        tree = {"not": tree}
    error = error_of(one_recipe(host_requires=tree))
    assert error.field == "recipe_sets[0].recipes[0].host_requires.not"
    assert "too deeply nested (at most 32 levels of and/or/not" in error.extra["reason"]
    many = one_recipe(tasks=[{"name": f"/t/{i}"} for i in range(30_000)])
    assert "too large" in error_of(many).extra["reason"]
