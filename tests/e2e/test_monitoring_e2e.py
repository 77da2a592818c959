"""Metrics, readiness and logs of a real `serve`: gunicorn with two API processes, plus the worker.

One server for the module: every test adds requests and events and reads back what it caused.
"""
import re
import shutil
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import requests
from prometheus_client import CollectorRegistry
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.test_provisioning_e2e import wait_for
from tests.support.live import BIN, LiveServer
from tests.support.postgres import free_port

TOKEN = "scrape-T0KEN-secret"
FAIL = "#!/bin/sh\necho 'the PDU refused' >&2\nexit 1\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    metrics_port = free_port()
    live = LiveServer(tmp_path_factory.mktemp("monitoring") / "data", workers=2, serve_args=("--access-log", "-"),
                      settings={"metrics_token": TOKEN, "metrics_listen": f"127.0.0.1:{metrics_port}",
                                "command_max_attempts": 1, "webhook_allowed_networks": "127.0.0.1/32",
                                "outbox_retry_delay": "1h"}).start()
    live.metrics_url = f"http://127.0.0.1:{metrics_port}/metrics"
    (live.data_dir / "power-scripts" / "fail").write_text(FAIL)
    (live.data_dir / "power-scripts" / "fail").chmod(0o755)
    live.alice = live.add_user("alice")
    yield live
    live.stop()


def scrape(server) -> dict:
    response = requests.get(server.metrics_url, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10)
    assert response.status_code == 200
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(response.text) for s in family.samples}


def api_processes(server) -> list[int]:
    """gunicorn's request workers: the arbiter's children but the background worker."""
    children = Path(f"/proc/{server.process.pid}/task/{server.process.pid}/children").read_text().split()
    return [int(pid) for pid in children if Path(f"/proc/{pid}/comm").read_text().strip() != "lablease-worker"]


def test_metrics_answer_only_on_the_metrics_listener_and_with_the_token(server):
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    assert requests.get(server.url + "/metrics", headers=bearer, timeout=10).status_code == 404
    assert requests.get(server.metrics_url, timeout=10).status_code == 401
    assert requests.get(server.metrics_url, headers=bearer, timeout=10).headers["Content-Type"].startswith(
        "text/plain; version=")


def counted_by(server, pid: int, key) -> float:
    """What one process's own file holds (read alone, with prometheus-client's multiprocess reader)."""
    own = server.data_dir / "metrics" / f"counter_{pid}.db"
    if not own.exists():
        return 0  # it has counted nothing yet
    alone = server.data_dir / f"alone-{pid}"
    alone.mkdir(exist_ok=True)
    shutil.copy(own, alone / own.name)
    registry = CollectorRegistry()
    MultiProcessCollector(registry, str(alone))
    return next((s.value for family in registry.collect() for s in family.samples
                 if (s.name, frozenset(s.labels.items())) == key), 0)


def test_request_counts_add_up_across_the_api_processes_and_the_worker(server):
    me = ("lablease_http_requests_total", frozenset({("route", "/api/v1/me"), ("method", "GET"), ("status", "200")}))
    headers = {"Authorization": f"Bearer {server.tokens['admin']}"}
    pids = api_processes(server)
    assert len(pids) == 2
    before = {pid: counted_by(server, pid, me) for pid in pids}
    sent = 0
    while sent == 0 or not all(counted_by(server, pid, me) > before[pid] for pid in pids):
        with ThreadPoolExecutor(8) as pool:  # a connection each: the kernel spreads them over both processes
            answers = list(pool.map(lambda _: requests.get(server.url + "/api/v1/me", headers=headers, timeout=10),
                                    range(16)))
        assert all(a.status_code == 200 for a in answers)
        sent += len(answers)
        assert sent < 800, "one API process answered every request"
    # both processes answered some; whichever answers the scrape counts what both did
    for _ in range(4):
        got = scrape(server)
        assert got[me] == sum(before.values()) + sent
    # and what the worker process did: its passes, timed in its own process
    assert got[("lablease_worker_pass_duration_seconds_count", frozenset())] >= 1


def test_worker_instruments_expiry_lateness_command_outcomes_and_delivery_failures(server):
    admin, alice = server.admin, server.alice
    closed = free_port()
    assert alice.patch("/me", json={"webhook_url": f"http://127.0.0.1:{closed}/hook"}).status_code == 200
    power = {"driver": "command", "script": "fail", "address": "pdu-m1", "password": "PDU-PASSWORD-secret"}
    assert admin.post("/systems", json={"fqdn": "m1.lab.test", "arch": "x86_64", "condition": "manual",
                                        "power": power}).status_code == 201
    assert admin.post("/systems", json={"fqdn": "m2.lab.test", "arch": "x86_64",
                                        "condition": "manual"}).status_code == 201
    short = alice.post("/reservations", json={"system": "m2.lab.test", "duration": "1s"}).json()
    command = admin.post("/systems/m1.lab.test/power", json={"action": "on"}).json()
    wait_for("the command to fail", lambda: admin.get(f"/commands/{command['id']}").json()["status"] == "failed")
    wait_for("the expiry", lambda: alice.get(f"/reservations/{short['id']}").json()["state"] != "active")
    expired = ("lablease_worker_due_lateness_seconds_count", frozenset({("kind", "reservation_expiry")}))
    failed = ("lablease_outbox_deliveries_total", frozenset({("channel", "webhook"), ("outcome", "failed")}))
    got = wait_for("the notice's delivery to fail", lambda: (g := scrape(server)).get(failed) and g)
    assert got[expired] >= 1
    assert got[("lablease_commands_total", frozenset({("driver", "command"), ("action", "on"),
                                                      ("outcome", "failed")}))] == 1
    assert got[("lablease_outbox_backlog", frozenset())] >= 1  # retried in an hour: still waiting
    assert got[("lablease_systems", frozenset({("condition", "manual"), ("usage", "idle")}))] >= 2
    assert got[("lablease_scheduler_event_duration_seconds_count", frozenset({("event", "system_freed")}))] >= 1


def test_readiness_and_status_once_the_worker_beats(server):
    wait_for("readiness", lambda: requests.get(server.url + "/api/v1/ready", timeout=5).status_code == 200)
    assert requests.get(server.url + "/api/v1/health", timeout=5).json() == {"status": "ok"}
    # warned an hour before its end (warn_before_short): the worker's next item, in two hours
    held = server.alice.post("/reservations", json={"system": "m2.lab.test", "duration": "3h"}).json()
    out = server.admin_cli("status")
    assert out.splitlines()[:2] == [f"liveness:  ok ({server.url}/api/v1/health)", "readiness: ready"]
    assert "recipe queue: 0 queued" in out and "commands: 0 queued, 0 running" in out
    assert re.search(rf"^oldest due item: reservation_warning {held['id']} at \d{{4}}-\d\d-\d\d \d\d:\d\d UTC \(in 1h5\dm", out, re.M), out
    down = subprocess.run([str(BIN / "lablease-server"), "status", "--url", f"http://127.0.0.1:{free_port()}"],
                          env=server.env, capture_output=True, text=True, timeout=60)
    assert down.returncode == 3 and down.stdout.startswith("liveness:  no answer")


def test_logs_carry_request_ids_and_never_a_token_password_or_query(server):
    admin = server.admin
    answer = admin.get("/systems", params={"lab": "QUERY-secret-lab"}, headers={"X-Request-Id": "req-query-1"})
    assert answer.status_code == 200 and answer.headers["X-Request-Id"] == "req-query-1"
    assert admin.post("/systems", json={"fqdn": "m3.lab.test", "arch": "x86_64", "condition": "manual",
                                        "power": {"driver": "command", "script": "fail",
                                                  "password": "BODY-PASSWORD-secret"}}).status_code == 201
    denied = server.api().get("/me", headers={"Authorization": "Bearer NOT-A-TOKEN-secret",
                                              "X-Request-Id": "req-denied-1"})
    assert denied.status_code == 401 and denied.headers["X-Request-Id"] == "req-denied-1"
    assert server.api().get("/installations/1/kickstart?token=INSTALL-secret").status_code == 403
    assert admin.get("/me").status_code == 200  # after them all: every line above is written
    wait_for("the access line", lambda: "request_id=req-denied-1 msg=request" in server.read_log())
    lines = server.read_log().splitlines()
    # the refusal's error line and its access line carry the id the client sent and got back
    refused = [line for line in lines if "request_id=req-denied-1" in line]
    assert any("logger=lablease.api" in line and "authentication refused" in line for line in refused)
    assert any("logger=gunicorn.access" in line and "status=401" in line for line in refused)
    assert any("request_id=req-query-1" in line and "path=/api/v1/systems status=200" in line for line in lines)
    # every line is one event in the key=value form, and no line holds a secret or a query
    event = re.compile(r"^time=\S+Z level=\w+ logger=\S+ request_id=\S+ msg=")
    assert [line for line in lines if not event.match(line)] == []
    secrets = [TOKEN, *server.tokens.values(), "QUERY-secret", "BODY-PASSWORD", "NOT-A-TOKEN", "INSTALL-secret",
               "PDU-PASSWORD", "lab="]
    assert [line for line in lines if any(secret in line for secret in secrets)] == []
