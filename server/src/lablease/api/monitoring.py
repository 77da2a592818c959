"""Around the whole WSGI application: request ids, request metrics, and `GET /metrics`.

Every request gets an id: a sane `X-Request-Id` sent by the client (or a
proxy) is kept, anything else replaced by a new one. It is answered back in
`X-Request-Id`, written in the access log, and carried by every log line
written while the request is handled (observe/logs.py). Requests are counted
and timed by route (the rule, `/api/v1/reservations/<int:id>`, never the raw
path, so the series stay few) — the application names the rule it matched in
`environ["lablease.route"]`.
"""
from __future__ import annotations

import hmac
import re
import time
import uuid

from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.core import GaugeMetricFamily
from werkzeug.wrappers import Request, Response

from ..config import Settings
from ..observe import metrics
from ..observe.logs import REQUEST_ID
from ..services.reads import monitoring
from ..services.handlers import unit_of_work
from . import errors

ROUTE_KEY = "lablease.route"
METRICS_PATH = "/metrics"
_SANE_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@/+=-]{0,127}$")


def request_id(sent: str | None) -> str:
    """The client's id when it is sane (short, printable, no spaces), else a new one."""
    return sent if sent and _SANE_ID.match(sent) else uuid.uuid4().hex


class Observed:
    """WSGI middleware: wrap(app) answers as app does, observed."""

    def __init__(self, app):
        object.__setattr__(self, "app", app)  # settings, db and clock are the application's own

    def __getattr__(self, name):  # the wrapped application's attributes (routes, url_map...) stay reachable
        if name == "app":  # not set yet (e.g. while copying): never recurse
            raise AttributeError(name)
        return getattr(self.app, name)

    def __setattr__(self, name, value):  # one set of settings: a change (tests, a reload) reaches the application
        setattr(self.app, name, value)

    def __call__(self, environ, start_response):
        ident = request_id(environ.get("HTTP_X_REQUEST_ID"))
        environ["lablease.request_id"] = ident
        token = REQUEST_ID.set(ident)
        seen = {}

        def start(status, headers, exc_info=None):
            headers = [(k, v) for k, v in headers if k.lower() != "x-request-id"] + [("X-Request-Id", ident)]
            seen["status"] = status.split(None, 1)[0]
            return start_response(status, headers, exc_info)

        tools = metrics.instruments()
        started = time.perf_counter()
        tools.in_progress.inc()
        try:
            if environ.get("PATH_INFO") == METRICS_PATH:
                environ[ROUTE_KEY] = METRICS_PATH
                return self.scrape(Request(environ))(environ, start)
            return self.app(environ, start)
        finally:
            tools.in_progress.dec()
            labels = {"route": environ.get(ROUTE_KEY, "unmatched"), "method": environ.get("REQUEST_METHOD", "-"),
                      "status": seen.get("status", "500")}
            tools.requests.labels(**labels).inc()
            tools.latency.labels(**labels).observe(time.perf_counter() - started)
            REQUEST_ID.reset(token)

    def scrape(self, request: Request) -> Response:
        if not self.allowed(request):
            return errors.problem(404, "Not Found", "no such resource", "not-found")
        if self.settings.metrics_token and not hmac.compare_digest(
                request.headers.get("Authorization", ""), f"Bearer {self.settings.metrics_token}"):
            return errors.problem(401, "Unauthorized", "/metrics needs the metrics token (metrics_token)",
                                  "unauthenticated")
        return Response(metrics.exposition(DatabaseCollector(self.db, self.settings, self.clock)),
                        content_type=CONTENT_TYPE_LATEST)

    def allowed(self, request: Request) -> bool:
        """On the metrics listener when there is one; with a token anywhere when there is none; else nowhere."""
        if self.settings.metrics_listen:
            return request.environ.get("SERVER_PORT") == self.settings.metrics_listen.rpartition(":")[2]
        return bool(self.settings.metrics_token)


class DatabaseCollector:
    """The gauges read from the database at scrape time (services/reads/monitoring.py: indexed aggregates)."""

    def __init__(self, db, settings: Settings, clock):
        self.db, self.settings, self.clock = db, settings, clock

    def collect(self):
        up = GaugeMetricFamily("lablease_database_up", "Whether the scrape could read the database")
        try:
            with unit_of_work(self.db, self.settings, write=False) as uow:
                data = monitoring.snapshot(uow, self.clock())
        except Exception:  # noqa: BLE001 - the scrape still answers, saying the database did not
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from families(data)


def _gauge(name: str, doc: str, value=None, labels=(), rows=()):
    family = GaugeMetricFamily(name, doc, value=value, labels=list(labels) or None)
    for *label_values, count in rows:
        family.add_metric(label_values, count)
    return family


def families(data: dict):
    yield _gauge("lablease_reservations", "Reservations not returned: active (started) or waiting (start ahead)",
                 labels=["state"], rows=data["reservations"].items())
    yield _gauge("lablease_loans_active", "Loans not returned", data["loans_active"])
    yield _gauge("lablease_recipes", "Unfinished recipes by state", labels=["state"], rows=data["recipes"].items())
    yield _gauge("lablease_recipe_queue_depth", "Recipes queued for a system", data["recipe_queue"]["depth"])
    yield _gauge("lablease_recipe_queue_oldest_seconds", "How long the oldest queued recipe has waited",
                 data["recipe_queue"]["oldest_seconds"])
    yield _gauge("lablease_systems", "Systems by condition and usage", labels=["condition", "usage"],
                 rows=data["systems"])
    yield _gauge("lablease_commands", "Power and netboot commands queued or running", labels=["state"],
                 rows=data["commands"].items())
    yield _gauge("lablease_command_queue_oldest_seconds", "How long the oldest queued command has been due",
                 data["command_queue_oldest_seconds"])
    yield _gauge("lablease_outbox_backlog", "Messages (mail, webhooks) waiting to be delivered",
                 data["outbox"]["backlog"])
    yield _gauge("lablease_outbox_oldest_seconds", "Age of the oldest message waiting to be delivered",
                 data["outbox"]["oldest_seconds"])
    labs = data["labs"]
    yield _gauge("lablease_lab_agent_last_seen_age_seconds", "Since each lab's agent last asked for work (labs "
                 "whose agent never came are left out)", labels=["lab"],
                 rows=[(lab, age) for lab, age in labs["agent_seen_age_seconds"].items() if age is not None])
    yield _gauge("lablease_lab_commands", "A lab agent's commands queued or running, by lab", labels=["lab", "state"],
                 rows=labs["commands"])
    if data["worker_heartbeat_age_seconds"] is not None:
        yield _gauge("lablease_worker_heartbeat_age_seconds", "Since the newest worker heartbeat",
                     data["worker_heartbeat_age_seconds"])
