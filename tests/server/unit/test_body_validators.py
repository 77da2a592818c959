"""The compiled validator that lets a valid body skip jsonschema's walk never accepts what jsonschema refuses.

api/inputs.py checks a body first with jsonschema-rs and, when it finds it valid, takes it; every other body
goes to jsonschema, which words the refusal. So the two must agree on "valid" for every route's schema: a body
the fast one took and jsonschema would have refused would reach a view unchecked.

Bodies are built from each route's schema, valid (three in four; the fourth breaks one of its rules on which
fields go together), and each is checked with every body one defect away from it: a value of another type,
just past a bound, a pattern's match bent where regular expression dialects part, an item short or over, a
field missing or unknown. Those are the bodies a validator that skipped or misread one rule would take. (Bodies
drawn at random, as before, were nearly all refused by both: 25 of 2,400 were ever compared.)
"""
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lablease.api.inputs import _fast_validator, _quickly_valid, _validator, check_body
from lablease.api.routes import ROUTES
from lablease.domain.errors import Invalid

SCHEMAS = {route.endpoint: route.body for route in ROUTES if isinstance(route.body, dict)}
RESERVE = next(route.body for route in ROUTES if route.method == "POST" and route.path.endswith("/reservations"))


# The values a client sends, and the edges where two validators could differ: times and durations in and out
# of their patterns (with trailing newlines), integers past 64 bits, floats that are whole, odd text.
TEXTS = st.sampled_from(["s1.lab.test", "1h", "90m", "1h\n", " 2h ", "0s", "P1D", "10m", "manual", "x86_64",
                         "2030-01-01T00:00:00Z", "2030-01-01T00:00:00Z\n", "1969-12-31T23:59:59Z", "now",
                         "alice", "a@b.test", "", "\u0661h", "https://hooks.example.test/x", "ftp://x", "é"]) \
    | st.text(max_size=12)
SCALARS = st.none() | st.booleans() | st.integers(min_value=-2, max_value=2**70) | \
    st.floats(allow_nan=False, allow_infinity=False) | st.just(2.0) | TEXTS
ANY = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXTS, inner, max_size=3),
                   max_leaves=4)

# A string that matched its pattern, bent where regular expression dialects part: a newline at an end (Python's
# `$` matches before a final one), Unicode digits and spaces (`\d`, `\s`), an astral character (a length in
# code points or in UTF-16 units), one character short or over.
BENDS = (lambda s: s + "\n", lambda s: "\n" + s, lambda s: s + " ", lambda s: re.sub("[0-9]", "\u0661", s, count=1),
         lambda s: s.replace(" ", "\u3000", 1) + "\ufeff", lambda s: s + "\U0001f600", lambda s: s[:-1],
         lambda s: s + s[-1:])
# Integers at the edges of 32 and 64 bits and past them.
BIG = (2**31 - 1, 2**31, 2**53 + 1, 2**63 - 1, 2**63, 2**64, 2**70, -(2**63) - 1)


def _types(schema: dict) -> list:
    kinds = schema.get("type", ["object"] if "properties" in schema else [])
    return [kinds] if isinstance(kinds, str) else list(kinds)


def _branches(schema: dict) -> list | None:
    """A field's alternatives (oneOf/anyOf), each with the rest of the field's schema."""
    branches = schema.get("oneOf") or schema.get("anyOf")
    rest = {key: value for key, value in schema.items() if key not in ("oneOf", "anyOf")}
    return [{**rest, **branch} for branch in branches] if branches else None


def _string(schema: dict):
    pattern = schema.get("pattern")
    # a prefix (a time's year) is only a prefix; a final newline, which Python's `$` lets by, is left to BENDS
    text = st.from_regex(pattern, fullmatch=pattern.endswith("$")) if pattern else TEXTS
    low, high = schema.get("minLength", 0), schema.get("maxLength")
    return text.filter(lambda s: low <= len(s) <= (high or len(s)))


def valid(schema):
    """Values that satisfy schema (most do: what an object's rules refuse, jsonschema refuses too)."""
    if not isinstance(schema, dict) or not schema or set(schema) <= {"description"}:
        return ANY
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    if branches := _branches(schema):
        return st.one_of([valid(branch) for branch in branches])
    made = []
    for kind in _types(schema):
        if kind == "string":
            made.append(_string(schema))
        elif kind in ("integer", "number"):
            inside = st.integers(schema.get("minimum"), schema.get("maximum"))
            made.append(inside | inside.map(float))  # 2.0 is an integer to JSON Schema
        elif kind == "boolean":
            made.append(st.booleans())
        elif kind == "null":
            made.append(st.none())
        elif kind == "array":
            made.append(st.lists(valid(schema.get("items", {})), min_size=schema.get("minItems", 0),
                                 max_size=min(schema.get("maxItems", 3), 3),
                                 unique_by=repr if schema.get("uniqueItems") else None))
        elif kind == "object":
            made.append(Objects(schema).strategy)
    return st.one_of(made) if made else ANY


# Values of other types: a boolean is no integer to JSON Schema, 1.5 no integer, "1" no number...
OTHER_TYPES = (None, True, 0, 1, 1.5, "", "1", [], {})


def defects(schema, value):
    """value (valid for schema) changed in one place: of another type, just past one of schema's bounds, bent
    where regular expression dialects part, one item short or over, a required field left out, a field the
    schema does not know; inside objects and arrays, each of their values so changed (the first item of an
    array). What a validator that skipped or misread one rule would take."""
    if not isinstance(schema, dict) or not schema or set(schema) <= {"description"}:
        return  # anything is valid
    yield from OTHER_TYPES
    if "const" in schema or "enum" in schema:
        for choice in schema.get("enum", [schema.get("const")]):
            yield from [f"{choice}x", choice.upper(), choice[:-1]] if isinstance(choice, str) else \
                [not choice] if isinstance(choice, bool) else []
        return
    for branch in _branches(schema) or [schema]:
        yield from _defects_of_one_kind(branch, value)


def _defects_of_one_kind(schema: dict, value):
    if isinstance(value, str) and "string" in _types(schema):
        yield from (bend(value) for bend in BENDS)
        if "maxLength" in schema:
            yield (value + "a" * schema["maxLength"])[:schema["maxLength"] + 1]
        if schema.get("minLength"):
            yield value[:schema["minLength"] - 1]
    elif isinstance(value, (int, float)) and not isinstance(value, bool) \
            and {"integer", "number"} & set(_types(schema)):
        edges = [*BIG] + [schema[key] + step for key, step in (("minimum", -1), ("maximum", 1)) if key in schema]
        yield from (form for n in edges for form in (n, float(n), n + 0.5, str(n)))
        yield value + 0.5
    elif isinstance(value, list) and "array" in _types(schema):
        if schema.get("minItems"):
            yield value[:schema["minItems"] - 1]
        if value and schema.get("uniqueItems"):
            yield value + value[:1]
        if value and "maxItems" in schema:
            yield value + value[:1] * (schema["maxItems"] + 1 - len(value))
        if value:
            yield from ([item] + value[1:] for item in defects(schema.get("items", {}), value[0]))
    elif isinstance(value, dict) and "object" in _types(schema):
        properties, extra = schema.get("properties", {}), schema.get("additionalProperties", True)
        for name in schema.get("required", []):
            yield {key: field for key, field in value.items() if key != name}
        yield {**value, "sytem": "s1.lab.test"}  # a field the schema does not know (a misspelt one)
        for name, field in value.items():
            for changed in defects(properties.get(name, extra if isinstance(extra, dict) else {}), field):
                yield {**value, name: changed}


def _name_rules(schema: dict) -> tuple[list, list]:
    """Which fields go together, as an object's combinators say: groups of branches each naming the fields it
    requires (oneOf: exactly one branch; anyOf: at least one), and sets of fields never all given (not)."""
    groups, never = [], []
    for part in [schema, *schema.get("allOf", [])]:
        for key in ("oneOf", "anyOf"):
            branches = part.get(key, [])
            if branches and all(isinstance(branch, dict) and "required" in branch for branch in branches):
                groups.append((key, branches))
        refused = part.get("not", {})
        never += [set(rule["required"]) for rule in refused.get("anyOf", [refused]) if "required" in rule]
    return groups, never


class Objects:
    """Objects of a schema: its required fields and, half the time, every other field (so that every rule of
    a nested object is in reach of defects()), else a few, chosen as its rules allow, each with a valid value;
    one time in four they break one of its rules on which fields go together (two of a oneOf's branches, none
    of an anyOf's, all of the fields of a `not`)."""

    def __init__(self, schema: dict):
        properties = schema.get("properties", {})
        self.names = sorted(properties)
        self.required = [name for name in schema.get("required", []) if name in properties]
        self.values = {name: valid(properties[name]) for name in self.names}
        self.groups, self.never = _name_rules(schema)
        # a branch may narrow a field (a reservation that waits: wait is true)
        self.narrowed = [[{name: valid({**properties.get(name, {}), **rule})
                           for name, rule in branch.get("properties", {}).items()} for branch in branches]
                         for _, branches in self.groups]
        extra = schema.get("additionalProperties", True)
        self.extra = valid(extra) if isinstance(extra, dict) else None
        self.strategy = self._objects()

    def _objects(self):
        rules = [("group", n) for n in range(len(self.groups))] + [("never", n) for n in range(len(self.never))]

        @st.composite
        def draw_object(draw):
            broken = draw(st.sampled_from(rules)) if rules and draw(st.integers(0, 3)) == 0 else None
            wanted, values, barred = list(self.required), dict(self.values), set()
            for n, ((kind, branches), narrowing) in enumerate(zip(self.groups, self.narrowed)):
                picks = [draw(st.integers(0, len(branches) - 1))]
                if broken == ("group", n):  # two branches of a oneOf, none of an anyOf
                    picks = [] if kind == "anyOf" or len(branches) < 2 else \
                        [picks[0], (picks[0] + draw(st.integers(1, len(branches) - 1))) % len(branches)]
                    barred |= {name for branch in branches for name in branch["required"]} if not picks else set()
                elif kind == "oneOf":
                    barred |= {name for i, branch in enumerate(branches) if i != picks[0]
                               for name in branch["required"]}
                for pick in picks:
                    wanted += branches[pick]["required"]
                    values.update(narrowing[pick])
            if broken and broken[0] == "never":
                wanted += sorted(self.never[broken[1]])
            if self.names:  # half the time every field (each then checked bent), else a few
                some = self.names if draw(st.booleans()) else \
                    draw(st.lists(st.sampled_from(self.names), unique=True, max_size=3))
                wanted += [name for name in some if name not in barred]
            chosen = list(dict.fromkeys(wanted))
            for n, together in enumerate(self.never):
                while broken != ("never", n) and together <= set(chosen) and (
                        droppable := [name for name in chosen if name in together and name not in self.required]):
                    chosen.remove(droppable[-1])
            body = {name: draw(values[name]) for name in chosen}
            if self.extra is not None and (not self.names or draw(st.booleans())):
                body[draw(TEXTS)] = draw(self.extra)
            return body

        return draw_object()


# Built once per route: a strategy rebuilt for every example costs more than the example.
BODIES = {endpoint: Objects(schema).strategy for endpoint, schema in SCHEMAS.items()}


@pytest.mark.parametrize("endpoint", sorted(SCHEMAS))
def test_the_fast_check_never_accepts_what_jsonschema_refuses(endpoint):
    schema = SCHEMAS[endpoint]
    taken = []

    # Each example is a body and the hundred-odd bodies one defect away from it: checking those costs
    # microseconds a body, drawing one milliseconds. With a compiled validator made to skip one kind of rule
    # (a bound, a length, a pattern or its end anchor, additionalProperties, required, enum, const, not, oneOf
    # read as anyOf, integer read as number, minItems), 15 examples a route failed every run for each of the
    # 14, on 2 to 37 routes; 60 random bodies a route (the old test) caught 6 of them, 3 in every run.
    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(BODIES[endpoint])
    def check(body):
        taken.append(bool(body) and _quickly_valid(body, schema))
        for candidate in [body, *defects(schema, body)]:
            if _quickly_valid(candidate, schema):
                assert _validator(schema).is_valid(candidate), candidate

    check()
    # compared on bodies with fields, not only on refusals (the e-mail schemas have no fast check)
    assert any(taken) or _fast_validator(schema) is None


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
