"""Readiness, /metrics and request ids through the in-process application (SQLite and PostgreSQL)."""
from datetime import timedelta

import pytest
from prometheus_client.parser import text_string_to_metric_families
from werkzeug.test import Client

from lablease.api import create_app
from lablease.config import Settings
from lablease.store import migrate
from lablease.store.db import Database
from lablease.worker.loop import Worker

from .conftest import Lab, at

TOKEN = "metrics-s3cret"


@pytest.fixture
def lab(db, tmp_path):
    return Lab(db, Settings(data_dir=str(tmp_path / "data"), metrics_token=TOKEN, worker_heartbeat_timeout="60s"))


def ready(lab):
    response = lab.client.get("/api/v1/ready")
    return response.status_code, response.get_json()


def samples(text: str) -> dict:
    """{(name, frozenset(labels)): value} of a scrape."""
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def scrape(lab) -> dict:
    response = lab.client.get("/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
    assert response.status_code == 200 and response.mimetype == "text/plain"
    return samples(response.get_data(as_text=True))


def test_readiness_waits_for_a_worker_heartbeat_and_turns_stale_without_one(lab):
    status, body = ready(lab)
    assert status == 503 and body["checks"] == {"database": "ok", "schema": "ok", "worker": "no worker heartbeat seen"}
    assert body["detail"] == "not ready: worker: no worker heartbeat seen"
    worker = Worker(lab.settings, lab.db, clock=lab.clock)
    worker.beat()
    assert ready(lab) == (200, {"status": "ready", "checks": {"database": "ok", "schema": "ok", "worker": "ok",
                                                                "labs": "ok"}})
    lab.clock.advance(seconds=61)
    status, body = ready(lab)
    assert status == 503
    assert body["checks"]["worker"] == "last worker heartbeat 61 s ago (worker_heartbeat_timeout: 60 s)"
    worker.beat()  # beats again: ready again
    assert ready(lab)[0] == 200
    worker.forget()  # a worker stopping cleanly takes its heartbeat with it
    assert ready(lab)[1]["checks"]["worker"] == "no worker heartbeat seen"
    assert lab.client.get("/api/v1/health").status_code == 200  # liveness never depended on any of it


def test_readiness_refuses_an_old_schema_and_liveness_needs_no_database(tmp_path):
    old = Database(f"sqlite:///{tmp_path / 'old.db'}")
    migrate.upgrade(old, "0010")
    client = Client(create_app(Settings(data_dir=str(tmp_path)), old))
    response = client.get("/api/v1/ready")
    assert response.status_code == 503 and response.mimetype == "application/problem+json"
    assert response.get_json()["checks"]["schema"] == (
        f"at revision 0010, this server needs {migrate.head_revision()}: run lablease-server init")
    old.dispose()
    (tmp_path / "dir.db").mkdir()
    gone = Database(f"sqlite:///{tmp_path / 'dir.db'}")  # a directory: cannot even be opened
    client = Client(create_app(Settings(data_dir=str(tmp_path)), gone))
    assert client.get("/api/v1/health").status_code == 200
    response = client.get("/api/v1/ready")
    assert response.status_code == 503
    assert response.get_json()["checks"]["database"].startswith("unreachable: unable to open database file")


def test_metrics_need_the_token_or_the_metrics_listener(lab, tmp_path):
    assert lab.client.get("/metrics").status_code == 401
    assert lab.client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
    off = Client(create_app(Settings(data_dir=str(tmp_path)), lab.db, lab.clock))
    assert off.get("/metrics").status_code == 404  # neither a token nor a listener: off
    listener = Client(create_app(Settings(data_dir=str(tmp_path), metrics_listen="127.0.0.1:9188"), lab.db, lab.clock))
    assert listener.get("/metrics", base_url="http://127.0.0.1:8042").status_code == 404
    assert listener.get("/metrics", base_url="http://127.0.0.1:9188").status_code == 200


def test_gauges_are_read_from_the_database_at_scrape_time(lab):
    lab.system("g1.lab.test")
    lab.system("g2.lab.test")
    lab.system("g3.lab.test", condition="automated")
    assert lab.alice.post("/reservations", {"system": "g1.lab.test", "duration": "1h"})[0] == 201
    later = at(lab.clock() + timedelta(hours=2))
    assert lab.alice.post("/reservations", {"system": "g2.lab.test", "start": later, "duration": "1h"})[0] == 201
    got = scrape(lab)
    assert got[("lablease_reservations", frozenset({("state", "active")}))] == 1
    assert got[("lablease_reservations", frozenset({("state", "waiting")}))] == 1
    assert got[("lablease_systems", frozenset({("condition", "manual"), ("usage", "idle")}))] == 2
    assert got[("lablease_systems", frozenset({("condition", "automated"), ("usage", "idle")}))] == 1
    assert got[("lablease_database_up", frozenset())] == 1
    assert got[("lablease_recipe_queue_depth", frozenset())] == 0


def test_requests_are_counted_by_route_rule_and_answer_their_request_id(lab):
    lab.system("r1.lab.test")
    key = ("lablease_http_requests_total",
           frozenset({("route", "/api/v1/systems/<fqdn>"), ("method", "GET"), ("status", "200")}))
    before = scrape(lab).get(key, 0)
    response = lab.client.get("/api/v1/systems/r1.lab.test", headers={
        "Authorization": f"Bearer {lab.tokens['alice']}", "X-Request-Id": "ci-run-42.step:7"})
    assert response.status_code == 200 and response.headers["X-Request-Id"] == "ci-run-42.step:7"
    assert scrape(lab)[key] == before + 1  # by the rule, not /api/v1/systems/r1.lab.test
    for insane in ("two words", "x" * 200, "<script>"):
        answered = lab.client.get("/api/v1/health", headers={"X-Request-Id": insane}).headers["X-Request-Id"]
        assert answered != insane and len(answered) == 32  # replaced by one of ours
    assert lab.client.get("/api/v1/nowhere").headers["X-Request-Id"]  # every answer carries one


def test_pages_are_counted_by_their_rule_too(lab):
    key = ("lablease_http_requests_total",
           frozenset({("route", "/systems/<fqdn>"), ("method", "GET"), ("status", "303")}))
    before = scrape(lab).get(key, 0)
    assert lab.client.get("/systems/r1.lab.test").status_code == 303  # to the sign-in page
    assert scrape(lab)[key] == before + 1
