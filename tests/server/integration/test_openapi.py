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
               "/api/v1/installations/<int:id>/" + EVENT, "/api/v1/recipes/<int:id>/" + EVENT}
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
