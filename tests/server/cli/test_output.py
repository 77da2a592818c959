"""The renderers and the exit-status table, without a server."""
from __future__ import annotations

import io
import json
import threading
import xml.etree.ElementTree as ET
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from lablease.cli import output
from lablease.cli.client import main
from lablease.cli.client_status import ExitStatus, http_status_to_exit_status


def test_times_are_shown_to_people_in_utc_to_the_minute_and_to_machines_as_rfc_3339():
    assert output.when("2026-11-22T16:00:59.123456+02:00") == "2026-11-22 14:00 UTC"
    assert output.when("2026-11-22T14:00:00Z") == "2026-11-22 14:00 UTC"
    assert output.when(None) == "-" and output.when("soon") == "soon"
    assert output.rfc3339("2026-11-22T16:00:00.123456+02:00") == "2026-11-22T14:00:00Z"


def test_a_message_reads_its_times_as_people_do():
    assert output.for_people("s1.lab.test is reserved by alice from 2026-11-22T04:08:20Z until "
                             "2026-11-22T10:08:20+02:00") == (
        "s1.lab.test is reserved by alice from 2026-11-22 04:08 UTC until 2026-11-22 08:08 UTC")
    assert output.for_people("reservation 1 until 2026-11-22 04:08 UTC") == "reservation 1 until 2026-11-22 04:08 UTC"
    assert output.for_people("build 2026-13-40T10:00:00Z, id 2026-11-22") == "build 2026-13-40T10:00:00Z, id 2026-11-22"
    # An instant before a colon is one too (client_waiting.ended's "... since <returned_at>: ...").
    assert output.for_people("expired since 2026-11-27T17:41:18Z: the system is no longer yours") == (
        "expired since 2026-11-27 17:41 UTC: the system is no longer yours")
    # But not the start of a longer time of day (an offset with seconds is not an instant it rewrites).
    assert output.for_people("at 2026-11-27T17:41+02:00:30") == "at 2026-11-27T17:41+02:00:30"


def test_table_aligns_columns_and_marks_empty_cells():
    text = output.table([{"a": "x", "b": None}, {"a": "longer", "b": ["p", "q"]}],
                        [("A", lambda r: r["a"]), ("B", lambda r: r["b"])])
    assert text.splitlines() == ["A       B", "x       -", "longer  p, q"]


def test_an_empty_listing_is_its_header():
    assert output.table([], [("FQDN", lambda r: r)]) == "FQDN"


def test_xml_form_of_nested_values():
    data = [{"fqdn": "s1", "cpus": None, "ok": True, "attributes": {"cpu model": "Xeon", "flags": ["a", "b"]},
             "systems": ["x", "y"]}]
    root = ET.fromstring(output.to_xml(data, "system", "systems"))
    (system,) = root.findall("system")
    assert system.find("cpus").get("null") == "true" and system.findtext("ok") == "true"
    entry = system.find("attributes/entry")
    assert (entry.get("key"), entry.text) == ("cpu model", "Xeon")
    assert [i.text for i in system.find("attributes/flags")] == ["a", "b"]
    assert [s.text for s in system.findall("systems/system")] == ["x", "y"]


def test_json_round_trips():
    data = {"id": 1, "end": None, "systems": ["a"]}
    assert json.loads(output.to_json(data)) == data


def test_heartbeat_seconds_read_as_durations():
    seconds = output.format_human
    assert (seconds(600), seconds(5400), seconds(90061), seconds(None)) == ("10m", "1h30m", "1d1h1m1s", None)


@pytest.mark.parametrize("code, status", [(400, 6), (401, 4), (403, 4), (404, 3), (409, 5), (422, 6),
                                          (429, 1), (500, 1), (503, 1)])
def test_http_failures_map_to_exit_statuses(code, status):
    assert http_status_to_exit_status(code) == status


class Failing(BaseHTTPRequestHandler):
    """A server that fails every request: problem+json on /problem, an HTML page otherwise."""

    def do_GET(self):
        if self.path.startswith("/problem"):
            body, kind = json.dumps({"type": "about:blank", "title": "Internal Server Error", "status": 500,
                                     "detail": "database on fire"}), "application/problem+json"
        else:
            body, kind = "<html><body>Bad Gateway</body></html>", "text/html"
        self.send_response(500 if self.path.startswith("/problem") else 502)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def failing_url():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Failing)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join()


@pytest.mark.parametrize("prefix, line", [
    ("/problem", "lablease: server error 500: database on fire\n"),
    ("/proxy", "lablease: server error 502: Bad Gateway\n"),
])
def test_server_errors_exit_1_with_one_line(failing_url, prefix, line):
    out, err = io.StringIO(), io.StringIO()
    code = main(["systems"], env={"LABLEASE_URL": failing_url + prefix, "LABLEASE_TOKEN": "t"}, stdout=out,
                stderr=err)
    assert (code, out.getvalue(), err.getvalue()) == (ExitStatus.ERROR, "", line)
