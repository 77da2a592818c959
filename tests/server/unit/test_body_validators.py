"""The compiled validator that lets a valid body skip jsonschema's walk never accepts what jsonschema refuses.

api/inputs.py checks a body first with jsonschema-rs and, when it finds it valid, takes it; every other body
goes to jsonschema, which words the refusal. So the two must agree on "valid" for every route's schema: a body
the fast one took and jsonschema would have refused would reach a view unchecked.
"""
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lablease.api.inputs import _quickly_valid, _validator, check_body
from lablease.api.routes import ROUTES
from lablease.domain.errors import Invalid

SCHEMAS = {route.endpoint: route.body for route in ROUTES if isinstance(route.body, dict)}
RESERVE = next(route.body for route in ROUTES if route.method == "POST" and route.path.endswith("/reservations"))


def _names(schema, found: set) -> set:
    """Every property name a schema mentions, nested ones too: bodies are built from them."""
    if isinstance(schema, dict):
        found.update(schema.get("properties", {}))
        for value in schema.values():
            _names(value, found)
    elif isinstance(schema, list):
        for value in schema:
            _names(value, found)
    return found


# The values a client sends, and the edges where two validators could differ: times and durations in and out
# of their patterns (with trailing newlines), integers past 64 bits, floats that are whole, odd text.
TEXTS = st.sampled_from(["s1.lab.test", "1h", "90m", "1h\n", " 2h ", "0s", "P1D", "10m", "manual", "x86_64",
                         "2030-01-01T00:00:00Z", "2030-01-01T00:00:00Z\n", "1969-12-31T23:59:59Z", "now",
                         "alice", "a@b.test", "", "\u0661h", "https://hooks.example.test/x", "ftp://x", "é"]) \
    | st.text(max_size=12)
SCALARS = st.none() | st.booleans() | st.integers(min_value=-2, max_value=2**70) | \
    st.floats(allow_nan=False, allow_infinity=False) | st.just(2.0) | TEXTS


def bodies(schema: dict):
    names = sorted(_names(schema, set())) or ["x"]
    values = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3)
                          | st.dictionaries(st.sampled_from(names), inner, max_size=3), max_leaves=8)
    return st.dictionaries(st.sampled_from(names), values, max_size=6)


@pytest.mark.parametrize("endpoint", sorted(SCHEMAS))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_the_fast_check_never_accepts_what_jsonschema_refuses(endpoint, data):
    schema = SCHEMAS[endpoint]
    body = data.draw(bodies(schema))
    if _quickly_valid(body, schema):
        assert _validator(schema).is_valid(body), body


def test_a_valid_reserve_takes_the_fast_check():
    schema = RESERVE
    body = {"system": "s1.lab.test", "start": "2030-01-01T00:00:00Z", "duration": "2h", "heartbeat": "10m"}
    assert _quickly_valid(body, schema) and check_body(body, schema) == body


def test_a_refusal_is_worded_by_jsonschema():
    schema = RESERVE
    for body, field in (({"system": "s1.lab.test", "duration": "2 fortnights"}, "duration"),
                        ({"system": "s1.lab.test", "sytem": 1}, "sytem"), ({"duration": "1h", "system": 2**80}, "system")):
        assert not _quickly_valid(body, schema)
        with pytest.raises(Invalid) as refused:
            check_body(body, schema)
        assert refused.value.field == field, refused.value


@pytest.mark.parametrize("space", ["\ufeff", "\x85", "\u3000", "\t"])
def test_both_validators_read_white_space_alike(space):
    """`\\s` means one set to jsonschema (Python's isspace) and another to the compiled validator (ECMAScript's):
    the schemas spell white space out (limits.SPACE), so a task named with it at an edge, or a package with it
    inside, is refused by both, and the job is refused rather than taken by one and refused by the other."""
    from lablease.jobxml.normalise import _compiled, _validator as job_validator

    job = {"recipe_sets": [{"recipes": [{"tasks": [{"name": f"{space}/distribution/check"}]}]}]}
    assert not _compiled().is_valid(job) and not job_validator().is_valid(job)
    job["recipe_sets"][0]["recipes"][0]["tasks"][0]["name"] = "/distribution/check"
    assert _compiled().is_valid(job) and job_validator().is_valid(job)
