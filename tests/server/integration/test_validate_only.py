"""?validate_only=true on every write, and POST /batch: all or nothing.

A validate-only request does all the real one would (every check, the database's too) and keeps
nothing: every table of the database - outbox (mail, webhooks) and command queue included - is
the same after it as before. A request the real run would refuse is refused the same way.
"""
from datetime import timedelta

import pytest
from sqlalchemy import inspect, text
from werkzeug.routing import Map, Rule

from lablease.api.routes import CONVERTERS, ROUTES
from lablease.config import Settings

from .conftest import START, Lab, at
from .test_provisioning_api import TREE, provisionable

H = timedelta(hours=1)
SMOKE = {"recipe_sets": [{"recipes": [{"tasks": [{"name": "/smoke"}]}]}]}


def everything(lab) -> dict:
    """Every row of every table, as text: what 'nothing was written' is compared on."""
    with lab.db.writer.connect() as connection:
        names = inspect(connection).get_table_names()
        return {name: sorted(repr(tuple(row)) for row in connection.execute(text(f'SELECT * FROM "{name}"')))
                for name in names}


def validated(lab, who, method, path, body=None, raw=None):
    """(status, JSON, response) of the request with ?validate_only=true, as `who`."""
    headers = {"Authorization": f"Bearer {lab.tokens[who]}"}
    separator = "&" if "?" in path else "?"
    if raw is not None:
        response = lab.client.open("/api/v1" + path + separator + "validate_only=true", method=method, data=raw,
                                   content_type="application/xml", headers=headers)
    else:
        response = lab.client.open("/api/v1" + path + separator + "validate_only=true", method=method, json=body,
                                   headers=headers)
    return response.status_code, response.get_json(silent=True), response


def ok(answer):
    status, body = answer
    assert 200 <= status < 300, body
    return body


@pytest.fixture
def noticing(db, tmp_path):
    """A site that mails and calls webhooks (on loopback): a change that tells somebody writes the outbox."""
    return Lab(db, Settings(data_dir=str(tmp_path / "data"), smtp_host="127.0.0.1",
                            webhook_allowed_networks=("127.0.0.1/32",)))


def scene(lab):
    """Something for every write to act on; returns the ids the requests need."""
    for who in ("alice", "bob"):  # each is told of what happens to what they hold, by mail and webhook
        ok(getattr(lab, who).patch("/me", {"email": f"{who}@lab.test", "webhook_url": "http://127.0.0.1:9/hook"}))
    lab.in_arusers("alice")
    for fqdn in ("s1.lab.test", "s2.lab.test", "s3.lab.test"):
        lab.system(fqdn)
    lab.system("a1.lab.test", condition="automated")
    provisionable(lab)
    tree = ok(lab.admin.post("/distro-trees", TREE))
    ok(lab.alice.post("/reservations", {"system": "p1.lab.test", "duration": "8h"}))
    reservation = ok(lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "2h", "heartbeat": "10m"}))
    ok(lab.admin.post("/systems/s2.lab.test/loan", {"recipient": "bob", "duration": "1d"}))
    ok(lab.alice.post("/groups", {"name": "team", "members": ["bob"]}))
    ok(lab.admin.post("/pools", {"name": "gpus", "owner_group": "team"}))
    ok(lab.alice.post("/pools/gpus/systems", {"fqdn": "s1.lab.test"}))
    pool_rule = ok(lab.alice.post("/pools/gpus/access-policy/rules", {"permission": "reserve", "group": "team"}))
    rule = ok(lab.admin.post("/systems/s1.lab.test/access-policy/rules", {"permission": "reserve", "user": "bob"}))
    ok(lab.admin.post("/health-checks", {"name": "smoke", "system": "a1.lab.test", "job": SMOKE, "after_recipes": 5}))
    job = ok(lab.alice.post("/jobs", {"recipe_sets": [{"recipes": [{"tasks": [{"name": "/t"}]}]}]}))
    advance = ok(lab.alice.post("/advance-reservations", {"name": "later", "hosts": ["s3.lab.test"],
                                                          "start": at(START + 30 * H), "duration": "2h"}))
    command = ok(lab.admin.post("/systems/p1.lab.test/power", {"action": "on"}))
    ok(lab.admin.put("/schedules/ip", {"default_duration": "2h"}))
    booking = ok(lab.alice.post("/schedules/ip/reservations", {"resource_id": "10.0.0.1", "duration": "1h"}))
    return {"reservation": reservation["id"], "rule": rule["id"], "pool_rule": pool_rule["id"], "job": job["id"],
            "recipe": job["recipe_sets"][0]["recipes"][0]["id"], "ar": advance["id"], "tree": tree["id"],
            "command": command["id"], "booking": booking["id"]}


def writes(ids):
    """(who, method, path, body): one request for each writing route, each one the server would accept."""
    return [
        ("alice", "POST", "/me/calendar", None),
        ("admin", "POST", "/systems", {"fqdn": "new.lab.test", "arch": "x86_64", "condition": "manual"}),
        ("admin", "PATCH", "/systems/s2.lab.test", {"lab": "west"}),
        ("admin", "DELETE", "/systems/s2.lab.test?force=true", None),
        ("admin", "POST", "/systems/a1.lab.test/health-check", None),
        ("admin", "POST", "/health-checks", {"name": "other", "arch": "x86_64", "job": SMOKE, "every": "1d"}),
        ("admin", "PATCH", "/health-checks/smoke", {"after_recipes": 9}),
        ("admin", "DELETE", "/health-checks/smoke", None),
        ("admin", "POST", "/systems/s3.lab.test/loan", {"recipient": "bob"}),
        ("admin", "PATCH", "/systems/s2.lab.test/loan", {"extend_by": "1d"}),
        ("admin", "DELETE", "/systems/s2.lab.test/loan", None),
        ("admin", "PUT", "/systems/s1.lab.test/access-policy", {"rules": [{"permission": "view", "everybody": True}]}),
        ("admin", "POST", "/systems/s1.lab.test/access-policy/rules", {"permission": "loan_self", "user": "bob"}),
        ("admin", "DELETE", f"/systems/s1.lab.test/access-policy/rules/{ids['rule']}", None),
        ("alice", "PATCH", "/me", {"email": "alice@lab.test"}),
        ("alice", "POST", "/groups", {"name": "other", "members": ["bob"]}),
        ("alice", "PATCH", "/groups/team", {"description": "d"}),
        ("alice", "DELETE", "/groups/team?force=true", None),  # it owns gpus and a rule grants to it
        ("alice", "POST", "/groups/team/members", {"user": "admin"}),
        ("alice", "DELETE", "/groups/team/members/bob", None),
        ("alice", "POST", "/pools", {"name": "other", "owner_group": "team"}),
        ("alice", "PATCH", "/pools/gpus", {"description": "d"}),
        ("admin", "DELETE", "/pools/gpus", None),
        ("alice", "POST", "/pools/gpus/systems", {"fqdn": "a1.lab.test"}),
        ("alice", "DELETE", "/pools/gpus/systems/s1.lab.test", None),
        ("alice", "POST", "/pools/gpus/access-policy/rules", {"permission": "view", "everybody": True}),
        ("alice", "DELETE", f"/pools/gpus/access-policy/rules/{ids['pool_rule']}", None),
        ("bob", "POST", "/reservations", {"system": "s2.lab.test", "duration": "1h"}),
        ("alice", "PATCH", f"/reservations/{ids['reservation']}", {"extend_by": "1h"}),
        ("alice", "DELETE", f"/reservations/{ids['reservation']}", None),
        ("alice", "POST", f"/reservations/{ids['reservation']}/heartbeat", None),
        ("alice", "POST", "/jobs", SMOKE),
        ("alice", "POST", f"/jobs/{ids['job']}/cancel", None),
        ("alice", "PATCH", f"/recipes/{ids['recipe']}", {"status": "aborted"}),
        ("alice", "POST", "/advance-reservations", {"name": "more", "hosts": ["s3.lab.test"],
                                                   "start": at(START + 40 * H), "duration": "1h"}),
        ("alice", "PATCH", f"/advance-reservations/{ids['ar']}", {"name": "renamed"}),
        ("alice", "DELETE", f"/advance-reservations/{ids['ar']}", None),
        ("admin", "POST", "/arches", {"name": "ia64"}),
        ("admin", "POST", "/distro-trees", dict(TREE, name="Fedora-41")),
        ("admin", "PATCH", f"/distro-trees/{ids['tree']}", {"ks_meta": "lang=C"}),
        ("admin", "DELETE", f"/distro-trees/{ids['tree']}", None),
        ("alice", "POST", "/systems/p1.lab.test/provision", {"distro_tree": "Fedora-40"}),
        ("admin", "POST", "/systems/p1.lab.test/power", {"action": "reboot"}),
        ("admin", "DELETE", f"/commands/{ids['command']}", None),
        ("admin", "PUT", "/schedules/vlan", {"default_duration": "1h"}),
        ("admin", "PUT", "/schedules/ip/resources/10.0.0.9", {"capacity": 2}),
        ("bob", "POST", "/schedules/ip/reservations", {"resource_id": "10.0.0.2", "duration": "1h"}),
        ("alice", "PATCH", f"/schedules/ip/reservations/{ids['booking']}", {"slice": "s"}),
        ("alice", "DELETE", f"/schedules/ip/reservations/{ids['booking']}", None),
        ("alice", "POST", "/batch", {"requests": [
            {"method": "POST", "path": "/api/v1/pools/gpus/systems", "body": {"fqdn": "a1.lab.test"}},
            {"method": "PATCH", "path": "/api/v1/pools/gpus", "body": {"description": "d"}}]}),
    ]


def endpoint_of(method, path):
    """The route (its endpoint, "METHOD /api/v1/...") a request goes to."""
    matcher = Map([Rule(r.path, endpoint=r.endpoint, methods=[r.method]) for r in ROUTES],
                  converters=CONVERTERS).bind("lablease")
    return matcher.match("/api/v1" + path.split("?")[0], method=method)[0]


def test_every_write_that_takes_validate_only_is_covered_here():
    """A new writing route must come with its case above (and so be shown to keep nothing)."""
    validating = {r.endpoint for r in ROUTES if "validate_only" in r.query}
    assert validating == {r.endpoint for r in ROUTES if r.writes and r.auth}
    ids = dict.fromkeys(("reservation", "rule", "pool_rule", "job", "recipe", "ar", "tree", "command", "booking"), 1)
    covered = {endpoint_of(method, path) for _, method, path, _ in writes(ids)}
    assert validating - covered == set()


def test_a_validated_write_keeps_nothing_and_answers_as_the_real_one(noticing):
    lab = noticing
    ids = scene(lab)
    statuses = {r.endpoint: {r.status, *r.also} for r in ROUTES}  # e.g. PUT: 201 when it would create
    before = everything(lab)
    for who, method, path, body in writes(ids):
        status, answer, response = validated(lab, who, method, path, body)
        assert status in statuses[endpoint_of(method, path)], (method, path, answer)
        assert response.headers.get("Validate-Only") == "true", (method, path)
        after = everything(lab)
        changed = [name for name in before if before[name] != after[name]]
        assert changed == [], (method, path, changed)
    # the same writes for real do tell people (the comparison above would have seen an outbox row)
    ok(lab.admin.delete("/systems/s2.lab.test/loan"))
    ok(lab.alice.delete(f"/reservations/{ids['reservation']}"))
    assert len(everything(lab)["outbox"]) > len(before["outbox"])


def test_a_validated_create_answers_what_it_would_make(lab):
    lab.system("s1.lab.test")
    status, made, _ = validated(lab, "alice", "POST", "/reservations", {"system": "s1.lab.test", "duration": "1h"})
    assert status == 201 and made["system"] == "s1.lab.test" and made["user"] == "alice" and made["state"] == "active"
    assert lab.alice.get("/reservations")[1] == []
    assert lab.alice.get("/systems/s1.lab.test")[1]["reservation"] is None


@pytest.fixture
def capped(db, tmp_path):
    """A site whose reservations last at most a week."""
    return Lab(db, Settings(data_dir=str(tmp_path / "data"), max_reservation_duration="7d"))


@pytest.mark.parametrize("who, method, path, body, status, says", [
    ("alice", "POST", "/reservations", {"system": "s1.lab.test", "duration": "30d"}, 422, "duration"),
    ("bob", "POST", "/reservations", {"system": "s1.lab.test", "duration": "1h"}, 409, "s1.lab.test"),
    ("alice", "POST", "/systems/p1.lab.test/power", {"action": "on"}, 403, "p1.lab.test"),
    ("admin", "POST", "/systems/s2.lab.test/power", {"action": "on"}, 409, "power"),
    ("alice", "POST", "/systems/s1.lab.test/provision", {"distro_tree": "Fedora-40"}, 409, "power"),
    ("admin", "POST", "/systems", {"fqdn": "x.lab.test", "arch": "bogus", "condition": "manual"}, 422, "arch"),
    ("admin", "POST", "/systems/s2.lab.test/loan", {"recipient": "nobody"}, 422, "nobody"),
    ("alice", "POST", "/groups/team/members", {"user": "nobody"}, 422, "nobody"),
    ("bob", "POST", "/schedules/ip/reservations", {"resource_id": "10.0.0.1", "duration": "1h"}, 409, "10.0.0.1"),
])
def test_a_validated_write_is_refused_as_the_real_one(capped, who, method, path, body, status, says):
    lab = capped
    provisionable(lab)
    ok(lab.admin.post("/distro-trees", TREE))
    lab.system("s1.lab.test")
    lab.system("s2.lab.test")
    lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "1h"})
    lab.alice.post("/groups", {"name": "team"})
    lab.admin.put("/schedules/ip", {"default_duration": "2h"})
    lab.alice.post("/schedules/ip/reservations", {"resource_id": "10.0.0.1", "duration": "1h"})
    before = everything(lab)
    checked, problem, _ = validated(lab, who, method, path, body)
    real = lab.client.open("/api/v1" + path, method=method, json=body,
                           headers={"Authorization": f"Bearer {lab.tokens[who]}"})
    assert checked == real.status_code, (problem, real.get_json())
    assert problem["detail"] == real.get_json()["detail"]
    assert (checked, says in problem["detail"]) == (status, True), problem
    assert everything(lab) == before


def test_malformed_job_xml_is_refused_when_only_validated(lab):
    status, problem, _ = validated(lab, "alice", "POST", "/jobs", raw=b"<job><recipeSet>")
    assert status == 422 and problem["detail"]


def test_a_batch_applies_all_or_nothing(lab):
    lab.system("s1.lab.test")
    lab.alice.post("/groups", {"name": "team"})
    lab.alice.post("/pools", {"name": "p3", "owner_group": "team"})
    before = everything(lab)
    status, problem = lab.alice.post("/batch", {"requests": [
        {"method": "POST", "path": "/api/v1/pools/p3/systems", "body": {"fqdn": "s1.lab.test"}},
        {"method": "POST", "path": "/api/v1/pools/p3/systems", "body": {"fqdn": "nope.lab.test"}}]})
    assert status == 404 and problem["detail"].startswith("request 2 of the batch (POST /api/v1/pools/p3/systems): ")
    assert problem["request"] == 2
    assert lab.alice.get("/pools/p3")[1]["systems"] == [] and everything(lab) == before

    status, answer = lab.alice.post("/batch", {"requests": [
        {"method": "POST", "path": "/api/v1/pools/p3/systems", "body": {"fqdn": "s1.lab.test"}},
        {"method": "PATCH", "path": "/api/v1/pools/p3", "body": {"description": "lab"}},
        {"method": "DELETE", "path": "/api/v1/pools/p3/systems/s1.lab.test", "query": {"force": False}}]})
    assert status == 200 and [r["status"] for r in answer["responses"]] == [200, 200, 204]
    assert answer["responses"][1]["body"]["description"] == "lab"
    assert lab.alice.get("/pools/p3")[1]["systems"] == []


@pytest.mark.parametrize("request_, says", [
    ({"method": "POST", "path": "/api/v1/nowhere"}, "not a route"),
    ({"method": "POST", "path": "/api/v1/jobs"}, "cannot be part of a batch"),
    ({"method": "POST", "path": "/api/v1/batch", "body": {"requests": []}}, "cannot be part of a batch"),
    ({"method": "DELETE", "path": "/api/v1/pools/p3/systems/s1.lab.test", "query": {"validate_only": True}},
     "validate_only"),
    ({"method": "PATCH", "path": "/api/v1/pools/p3", "body": {"colour": "red"}}, "colour"),
])
def test_a_batch_refuses_what_it_cannot_run(lab, request_, says):
    lab.alice.post("/groups", {"name": "team"})
    lab.alice.post("/pools", {"name": "p3", "owner_group": "team"})
    status, problem = lab.alice.post("/batch", {"requests": [request_]})
    assert status == 422 and says in problem["detail"], problem
