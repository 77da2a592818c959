"""The API description covers every route, validates, and every error has one shape."""
import pytest
from openapi_spec_validator import validate

from lablease.api.openapi import build_spec, openapi_path
from lablease.api.routes import EVENT, ROUTES


def test_the_spec_is_valid_openapi():
    validate(build_spec())


def test_every_route_is_described(lab):
    spec = lab.anonymous().get("/openapi.json")[1]
    rules = [(rule.rule, method) for rule in lab.app.url_map.iter_rules() for method in rule.methods
             if method not in ("HEAD", "OPTIONS")]
    assert len(rules) == len(ROUTES)
    actions = {"/api/v1/reservations/<int:id>/heartbeat", "/api/v1/jobs/<int:id>/cancel",  # no body: the path says it
               "/api/v1/installations/<int:id>/" + EVENT, "/api/v1/recipes/<int:id>/" + EVENT,
               "/api/v1/me/calendar",  # POST: a new secret calendar address
               "/api/v1/systems/<fqdn>/health-check"}  # POST: check it now
    routes = {(r.path, r.method): r for r in ROUTES}
    for path, method in rules:
        operation = spec["paths"][openapi_path(path)][method.lower()]
        assert operation["summary"], path
        assert operation["responses"], path
        route = routes[(path, method)]
        if route.body is not None or route.raw:
            assert "requestBody" in operation, (method, path)
        elif method in ("POST", "PATCH", "PUT"):
            assert path in actions, (method, path)


def _concrete(path: str) -> str:
    return (path.replace("<int:id>", "999999").replace("<fqdn>", "nope.lab.test").replace("<subject>", "nope")
            .replace("<resource_id>", "r").replace("<name>", "nope").replace("<user>", "nobody"))


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: r.endpoint)
def test_every_route_answers_errors_as_problem_json(lab, route):
    if not route.auth:
        return
    response = lab.client.open(_concrete(route.path), method=route.method)
    assert response.status_code == 401
    assert response.mimetype == "application/problem+json"
    body = response.get_json()
    assert set(body) >= {"type", "title", "status", "detail"} and body["status"] == 401
    if not route.body and "<" not in route.path:
        return
    response = lab.client.open(_concrete(route.path), method=route.method, json={"bogus": True},
                               headers={"Authorization": f"Bearer {lab.tokens['alice']}"})
    # a body of unknown fields is refused before anything is looked up; otherwise the object is missing
    expected = (422, 403) if route.body else (404, 403)  # 403: an admin-only route
    assert response.status_code in expected, (route.endpoint, response.data)
    assert response.mimetype == "application/problem+json", (route.endpoint, response.data)
    assert set(response.get_json()) >= {"type", "title", "status", "detail"}


# What the fuzzing (tests/e2e/test_api_fuzz.py) found, each pinned down.

def test_allow_names_only_the_methods_a_path_has(lab):
    # /installations/{id}/{event} once took any {event}: POST /installations/1/kickstart was routed to it
    response = lab.client.open("/api/v1/installations/1/kickstart", method="POST")
    assert response.status_code == 405 and response.headers["Allow"] == "GET, HEAD"
    assert lab.client.open("/api/v1/installations/1/nosuch", method="POST").status_code == 404


def test_every_status_a_route_answers_is_described(lab):
    spec = build_spec()
    assert "404" in spec["paths"]["/api/v1/reservations"]["get"]["responses"]  # ?system= naming nothing
    assert {"200", "201"} <= set(spec["paths"]["/api/v1/schedules/{subject}"]["put"]["responses"])
    assert lab.alice.get("/reservations", system="nope.lab.test")[0] == 404
    assert lab.admin.put("/schedules/fresh")[0] == 201 and lab.admin.put("/schedules/fresh")[0] == 200
    kickstart = spec["paths"]["/api/v1/installations/{id}/kickstart"]["get"]["responses"]["200"]
    assert list(kickstart["content"]) == ["text/plain"]


def test_a_body_is_required_only_when_an_empty_one_is_refused(lab):
    spec = build_spec()
    assert spec["paths"]["/api/v1/me"]["patch"]["requestBody"]["required"] is False
    assert spec["paths"]["/api/v1/reservations/{id}"]["patch"]["requestBody"]["required"] is True
    assert lab.alice.patch("/me")[0] == 200
    assert lab.alice.patch("/reservations/1")[1]["detail"] == "end: give end, extend_by or heartbeat"


@pytest.mark.parametrize("query, field", [({"until": ""}, "until"), ({"from": "2026-13-01T00:00:00Z"}, "from")])
def test_typed_query_values_must_be_values(lab, query, field):
    status, body = lab.alice.get("/reports/utilisation", **query)
    assert status == 422 and body["field"] == field


NOT_A_LIMIT = "must be a whole number from 1 to 1000"


@pytest.mark.parametrize("limit, reason", [
    ("0", "must be at least 1"), ("-1", NOT_A_LIMIT), ("1001", "is too large (at most 1000)"),
    ("١٢", NOT_A_LIMIT), ("1_0", NOT_A_LIMIT), ("9" * 5000, "is too large (at most 1000)"),
])
def test_limits_are_bounded_whole_numbers(lab, limit, reason):
    lab.system()
    status, body = lab.alice.get("/systems/s1.lab.test/activity", limit=limit)
    assert status == 422 and body["detail"] == f"limit: {reason}"


def test_rules_over_several_fields_name_the_first_field(lab):
    lab.system()
    status, body = lab.admin.post("/systems/s1.lab.test/access-policy/rules", {"permission": "view"})
    assert status == 422 and body["detail"] == "user: name exactly one of user, group or everybody: true"
    status, body = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "1h",
                                                    "end": "2026-11-23T00:00:00Z"})
    assert status == 422 and body["detail"] == "duration: give either end or duration, not both"


@pytest.mark.parametrize("body, field", [
    ({"fqdn": "s2.lab.test\n", "arch": "x86_64"}, "fqdn"),  # "$" alone took a final newline
    ({"fqdn": "s2.lab.test", "arch": "x86-64"}, "arch"),
    ({"fqdn": "s2.lab.test", "arch": "x86_64", "attributes": {"rack": {"row": 3}}}, "attributes.rack"),
])
def test_what_the_description_refuses_the_server_refuses(lab, body, field):
    status, answer = lab.admin.post("/systems", {"condition": "manual", **body})
    assert status == 422 and answer["field"] == field, answer


def test_names_with_a_final_newline_and_mail_addresses_without_at_are_refused(lab):
    assert lab.alice.post("/groups", {"name": "qe\n"})[1]["field"] == "name"
    assert lab.alice.patch("/me", {"email": "alice"})[1]["field"] == "email"


def test_whole_numbers_written_as_floats_are_whole_numbers(lab):
    lab.admin.put("/schedules/licence")
    status, body = lab.admin.put("/schedules/licence/resources/matlab", {"capacity": 3.0})
    assert status == 200 and body["capacity"] == 3


def test_an_advance_reservation_named_by_another_scripts_digit_is_looked_up_by_name(lab):
    assert lab.admin.get("/advance-reservations/\u00b9")[0] == 404  # "¹".isdigit(), but int() refuses it
