"""Odd and hostile input is refused with a clear 4xx in one place per class, never a 500.

Durations and times: timeparse.py against the calendar's range (domain/windows.py); path ids:
the router's converter (api/routes.py); JSON depth, numbers and strings: api/inputs.py;
installer tokens: their shape (services/provisioning/installations.py); advance reservations' `requires`:
the job's hostRequires grammar (jobxml/normalise.py).
"""
import dataclasses
import json
import logging
import re

import pytest

from lablease.api.routes import ROUTES

from .conftest import START, at
from .test_provisioning_api import setup as provision_setup

PROBLEM = "application/problem+json"
# As they travel in a JSON body: json.dumps cannot write 1e400, Infinity or NaN the way an attacker does.
HUGE_DURATIONS = ['"99999999d"', "1e308", "1e400", "Infinity", "NaN", '"P99999999999D"', '"99999999999:00:00"']


def send(lab, method, path, raw: str | bytes, caller=None, content_type="application/json"):
    """A raw body, as a hostile client writes it; (status, problem) with the problem's content type checked."""
    caller = caller or lab.admin
    response = lab.client.open("/api/v1" + path, method=method, data=raw,
                               headers={**caller.headers, "Content-Type": content_type})
    assert response.mimetype == PROBLEM or response.status_code < 400, response.data
    return response.status_code, response.get_json(silent=True)


def refused(status, problem, field=None):
    assert 400 <= status < 500 and status != 404, (status, problem)
    if field is not None:
        assert status == 422 and problem["detail"].startswith(field), problem
    return problem["detail"]


@pytest.fixture
def booked(lab):
    """A system, one reservation of it, a loan of another and a schedule subject, to aim at."""
    lab.system("s1.lab.test")
    lab.system("s2.lab.test")
    status, reservation = lab.admin.post("/reservations", {"system": "s1.lab.test", "duration": "1h"})
    assert status == 201, reservation
    status, loan = lab.admin.post("/systems/s2.lab.test/loan", {"recipient": "alice", "duration": "1d"})
    assert status == 201, loan
    assert lab.admin.put("/schedules/ip", {"default_duration": "2h"})[0] == 201
    return reservation


def duration_targets(reservation_id):
    """Every body field that is a duration: (method, path, JSON template with X for the value, field)."""
    return [
        ("POST", "/reservations", '{"system": "s1.lab.test", "start": "%s", "duration": X}' % at(START.replace(year=2027)),
         "duration"),
        ("POST", "/reservations", '{"system": "s1.lab.test", "heartbeat": X}', "heartbeat"),
        ("PATCH", f"/reservations/{reservation_id}", '{"extend_by": X}', "extend_by"),
        ("POST", "/systems/s1.lab.test/loan", '{"recipient": "bob", "duration": X}', "duration"),
        ("PATCH", "/systems/s2.lab.test/loan", '{"extend_by": X}', "extend_by"),
        ("POST", "/schedules/ip/reservations", '{"resource_id": "10.0.0.1", "duration": X}', "duration"),
        ("PUT", "/schedules/vlan", '{"default_duration": X}', "default_duration"),
        ("POST", "/advance-reservations", '{"duration": X, "count": 1}', "duration"),
        ("POST", "/jobs", '{"recipe_sets": [{"recipes": [{"reservesys": {"duration": X}}]}]}', "recipe_sets"),
        ("POST", "/jobs", '{"recipe_sets": [{"recipes": [{"runtime_limit": X}]}]}', "recipe_sets"),
    ]


@pytest.mark.parametrize("value", HUGE_DURATIONS)
def test_huge_and_non_finite_durations_are_refused_everywhere(lab, booked, value):
    for method, path, template, field in duration_targets(booked["id"]):
        status, problem = send(lab, method, path, template.replace("X", value))
        detail = refused(status, problem, field if status == 422 else None)
        assert status == 422 or "not a JSON number" in detail, (path, detail)
    # nothing was written: the one reservation, the one loan, no booking, no job
    assert [r["id"] for r in lab.admin.get("/reservations")[1]] == [booked["id"]]
    assert lab.admin.get(f"/reservations/{booked['id']}")[1]["end"] == booked["end"]
    assert lab.admin.get("/systems/s1.lab.test/loan")[0] == 404
    assert lab.admin.get("/schedules/ip/reservations")[1] == []
    assert lab.admin.get("/jobs")[1] == []


def test_a_duration_is_at_most_what_32_bits_of_seconds_hold(lab, booked):
    status, problem = lab.admin.patch(f"/reservations/{booked['id']}", {"extend_by": "24856d"})
    assert status == 422 and problem["detail"] == "extend_by: must be at most 2147483647 seconds (about 68 years)"
    # the longest duration, as seconds (unit forms are bounded by the grammar, docs/api.md)
    assert lab.admin.patch(f"/reservations/{booked['id']}", {"extend_by": 2**31 - 1})[0] == 200
    status, problem = lab.admin.patch(f"/reservations/{booked['id']}", {"extend_by": 2**31})
    assert status == 422 and problem["detail"] == "extend_by: must be at most 2147483647 seconds (about 68 years)"
    # stored as seconds in an integer column on PostgreSQL: the longest one still fits
    assert lab.admin.put("/schedules/ip", {"default_duration": 2**31 - 1})[0] == 200
    assert lab.admin.get("/schedules/ip")[1]["default_duration"] == "P24855DT3H14M7S"


FAR = "9999-12-31T00:00:00Z"


def test_times_outside_the_calendar_are_refused_in_bodies_and_queries(lab, booked):
    targets = [
        ("POST", "/reservations", {"system": "s1.lab.test", "start": FAR, "duration": "1h"}, "start"),
        ("POST", "/reservations", {"system": "s1.lab.test", "end": FAR}, "end"),
        ("PATCH", f"/reservations/{booked['id']}", {"end": FAR}, "end"),
        ("PATCH", "/systems/s2.lab.test/loan", {"end": "1969-12-31T23:59:59Z"}, "end"),
        ("POST", "/schedules/ip/reservations", {"resource_id": "10.0.0.1", "start": FAR, "duration": "1h"}, "start"),
        ("POST", "/advance-reservations", {"start": FAR, "duration": "1h", "count": 1}, "start"),
        ("POST", "/advance-reservations", {"start": "9999-12-31T23:00:00-05:00", "duration": "1h"}, "start"),
    ]
    for method, path, body, field in targets:
        refused(*lab.admin.call(method, path, body), field)
    for path, name in [("/systems", "free_from"), ("/systems", "free_until"), ("/systems/s1.lab.test/usage", "until"),
                       ("/reports/utilisation", "from"), ("/schedules/ip/reservations", "end")]:
        refused(*lab.admin.get(path, **{name: FAR}), name)
    assert [r["id"] for r in lab.admin.get("/reservations")[1]] == [booked["id"]]


def test_an_end_pushed_to_the_edge_of_the_calendar_stops_there(lab, booked):
    """Extensions add up: the end they reach is held to the calendar's range too (no overflow)."""
    assert lab.admin.patch(f"/reservations/{booked['id']}", {"end": "8950-01-01T00:00:00Z"})[0] == 200
    status, problem = lab.admin.patch(f"/reservations/{booked['id']}", {"extend_by": 2**31 - 1})
    assert status == 422 and problem["detail"].startswith("extend_by: must lie between")
    assert lab.admin.get(f"/reservations/{booked['id']}")[1]["end"] == "8950-01-01T00:00:00Z"


def _path_for(route, ident):
    values = {"fqdn": "s1.lab.test", "name": "ops", "subject": "ip", "event": "install_start", "key": "x"}
    return re.sub(r"<(?:(\w+):)?(\w+)>",
                  lambda m: str(ident) if m.group(1) == "int" else values.get(m.group(2), "x"), route.path)


ID_ROUTES = [r for r in ROUTES if "<int:" in r.path]


@pytest.mark.parametrize("ident", [2**31, 2**63, 2**64, 10**40])
def test_ids_beyond_64_bits_match_no_route_on_any_resource(lab, booked, ident):
    assert len(ID_ROUTES) > 20  # every resource with an id
    for route in ID_ROUTES:
        response = lab.client.open(_path_for(route, ident), method=route.method, json={} if route.writes else None,
                                   headers=lab.admin.headers)
        assert response.status_code == 404 and response.mimetype == PROBLEM, (route.endpoint, response.data)
    # the largest id is still an id: looked up, and not found
    status, problem = lab.admin.get(f"/reservations/{2**31 - 1}")
    assert status == 404 and "reservation" in problem["detail"].lower()


def test_whole_numbers_in_queries_are_bounded(lab, booked):
    for value in ("99999999999999999999", "-1"):
        refused(*lab.admin.get("/systems/s1.lab.test/activity", limit=value), "limit")
    assert lab.admin.get("/systems/s1.lab.test/activity", limit="5")[0] == 200


@pytest.mark.parametrize("raw, field", [
    ('{"name": "ops", "description": "\\ud800"}', "description"),
    ('{"name": "ops", "description": "a\\u0000b"}', "description"),
    ('{"name": "ops", "\\udfff": 1}', "\\udfff"),
    ('{"name": "ops", "description": "x", "members": ["\\ud800"]}', "members[0]"),
    ('{"name": "ops", "description": 1e400}', "description"),
    ('{"name": "ops", "description": 18446744073709551616}', "description"),
    ('{"name": "ops", "description": -2147483649}', "description"),
])
def test_strings_and_numbers_that_nothing_can_store_are_refused(lab, raw, field):
    status, problem = send(lab, "POST", "/groups", raw)
    assert status == 422 and problem["field"] == field, problem
    assert [g["name"] for g in lab.admin.get("/groups")[1]].count("ops") == 0


def test_nul_in_a_query_or_a_path_is_refused_before_any_lookup(lab, booked):
    refused(*lab.admin.get("/systems", owner="a\x00b"), "owner")
    refused(*lab.admin.get("/systems", free_from="2026-11-22T12:00:00Z\x00"), "free_from")
    for path in ("/systems/s1%00.lab.test", "/groups/a%00b", "/schedules/ip%00/reservations"):
        response = lab.client.get("/api/v1" + path, headers=lab.admin.headers)
        assert response.status_code == 404 and response.mimetype == PROBLEM, (path, response.data)


@pytest.mark.parametrize("path", ["/groups", "/jobs", "/reservations"])
def test_deeply_nested_json_is_refused_saying_so(lab, path):
    for opener, closer in (("[", "]"), ('{"a":', "}")):
        status, problem = send(lab, "POST", path, opener * 5000 + "1" + closer * 5000)
        assert status == 400 and "nested too deeply (at most 200 levels)" in problem["detail"], problem
    status, problem = send(lab, "POST", path, "[" * 201 + "]" * 201)
    assert status == 400 and "nested too deeply" in problem["detail"]


def test_an_installer_token_of_the_wrong_shape_is_forbidden(lab):
    provision_setup(lab)
    status, started = lab.alice.post("/systems/p1.lab.test/provision", {"distro_tree": "Fedora-40"})
    assert status == 202, started
    installation = started["id"]
    for token in ("%C3%A9", "%ED%A0%80", "a" * 5000, "abc%20def", "%0A"):
        for method, suffix in (("GET", "kickstart"), ("POST", "install_start")):
            response = lab.client.open(f"/api/v1/installations/{installation}/{suffix}?token={token}", method=method)
            assert response.status_code == 403 and response.mimetype == PROBLEM, (token, response.data)
    assert lab.alice.get(f"/installations/{installation}")[1]["status"] == "queued"


@pytest.mark.parametrize("requires, field", [
    ({"op": "=", "value": "x86_64"}, "requires: 'field' is a required property"),
    ({"not": {}}, "requires.not: 'field' is a required property"),
    ({"and": [{"field": "arch", "value": "x86_64"}, {"field": "nosuch", "value": 1}]}, "requires.and[1].field"),
    ({"field": "memory", "op": ">", "value": "lots"}, "requires.value"),
    ({"or": "arch"}, "requires.or"),
    (json.loads('{"not":' * 40 + '{"field": "arch", "value": "x"}' + "}" * 40), "requires.not.not"),
    ({"not": {"field": "loaned", "op": "=", "value": "bob"}}, "requires: loaned and user cannot choose"),
])
def test_advance_reservation_requirements_follow_the_host_filter_grammar(lab, requires, field):
    lab.system("a1.lab.test", condition="automated")
    status, problem = lab.admin.post("/advance-reservations", {"duration": "1h", "count": 1, "requires": requires})
    assert status == 422 and problem["detail"].startswith(field), problem
    assert lab.admin.get("/advance-reservations")[1] == []


def test_a_valid_requirement_is_stored_normalised(lab):
    lab.system("a1.lab.test", condition="automated", memory_mb=4096)
    status, ar = lab.admin.post("/advance-reservations", {"duration": "1h", "count": 1, "requires": {
        "and": [{"field": "memory", "op": ">=", "value": 2048}, {"not": {"field": "arch", "op": "==", "value": "s390x"}}]}})
    assert status == 201, ar
    assert ar["systems"] == ["a1.lab.test"]
    assert ar["requires"]["and"][1] == {"not": {"field": "arch", "op": "=", "value": "s390x"}}


def test_an_unexpected_error_is_problem_json_with_an_id_that_the_log_has(lab, monkeypatch, caplog):
    def broken(ctx):
        raise ZeroDivisionError("a bug")

    route = lab.app.routes["GET /api/v1/me"]
    monkeypatch.setitem(lab.app.routes, route.endpoint, dataclasses.replace(route, view=broken))
    with caplog.at_level(logging.ERROR, logger="lablease.api"):
        response = lab.client.get("/api/v1/me?token=SECRET-IN-QUERY", headers=lab.admin.headers)
    problem = response.get_json()
    assert response.status_code == 500 and response.mimetype == PROBLEM
    assert problem["error_id"] and problem["error_id"] in problem["detail"]
    assert "Traceback" not in response.get_data(as_text=True) and "a bug" not in problem["detail"]
    record = next(r for r in caplog.records if problem["error_id"] in r.getMessage())
    assert record.exc_info[0] is ZeroDivisionError  # the traceback is in the log, under the same id
    assert "SECRET-IN-QUERY" not in caplog.text


def test_an_advance_reservation_named_by_a_huge_number_is_not_found(lab):
    for ident in ("99999999999999999999", str(2**31), "\u00b2"):
        status, problem = lab.admin.get(f"/advance-reservations/{ident}")
        assert status == 404, problem


def test_a_chunked_body_the_server_does_not_frame_is_411(lab):
    """A WSGI server that leaves chunked framing to the application (unlike gunicorn): say so, never read nothing."""
    response = lab.client.post("/api/v1/groups", data=b'{"name": "ops"}',
                               headers={**lab.admin.headers, "Content-Type": "application/json",
                                        "Transfer-Encoding": "chunked"})
    assert response.status_code == 411 and response.mimetype == PROBLEM
    assert "Content-Length" in response.get_json()["detail"]
