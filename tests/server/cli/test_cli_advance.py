"""`lablease ar ...` (qrsub, qrstat, qrdel, qralter): advance reservations.

Three parts:
- without any server: the command line (Grid Engine's options and aliases), the
  conversion of Grid Engine's times and durations, `-l`, and qrstat's XML, which
  must validate against lablease/cli/qrstat.xsd;
- against a stub HTTP server that answers as the API contract says: the requests
  sent and what is printed for 201, 200 (-w v), 409, 429 (exit 25), 204;
- against the real server, like the other CLI tests: skipped while the server
  has no /api/v1/advance-reservations in its openapi.json (LIVE below).
"""
from __future__ import annotations

import argparse
import io
import json
import re
import threading
from datetime import datetime, timedelta, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest
from lxml import etree

from lablease.cli import client_advance
from lablease.cli.client import main
from lablease.cli.client_parser import build_parser
from lablease.cli.client_status import ExitStatus
from tests.support.live import LiveServer

NOW = datetime(2026, 11, 22, 4, 8, 20, tzinfo=timezone.utc)


def ar_routes_missing() -> bool:
    """Whether the server's /api/v1/openapi.json (built from its route table) lacks the AR routes."""
    from lablease.api.openapi import build_spec

    return "/api/v1/advance-reservations" not in build_spec()["paths"]


LIVE = pytest.mark.skipif(ar_routes_missing(), reason="the server has no /api/v1/advance-reservations yet")


@pytest.fixture(scope="module")
def schema() -> etree.XMLSchema:
    return etree.XMLSchema(etree.XML(client_advance.schema_path().read_bytes()))


def valid(schema: etree.XMLSchema, text: str) -> etree._Element:
    """The parsed document, after checking it against qrstat.xsd."""
    document = etree.fromstring(text.encode("utf-8"))
    schema.assertValid(document)
    return document


def parse(*argv: str) -> argparse.Namespace:
    return build_parser().parse_args(list(argv))


def usage_error(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as leaving:
        parse(*argv)
    assert leaving.value.code == 2
    return capsys.readouterr().err


SAMPLE = {
    "id": 7, "name": "nightly-perf", "owner": "alice", "account": "perf-team", "state": "w",
    "start": "2026-11-22T14:00:00Z", "end": "2026-11-22T18:00:00+00:00", "duration": 14400,
    "systems": ["a.lab.test", "b.lab.test"], "hosts": [],
    "requires": {"and": [{"field": "arch", "op": "=", "value": "x86_64"},
                         {"or": [{"field": "memory", "op": ">=", "value": 2048},
                                 {"not": {"field": "key_value", "key": "GPU", "op": "=", "value": "yes"}}]}]},
    "pools": ["perf"], "count": 2, "acl": ["alice", "@qe"], "mail": {"events": "bea", "to": ["qe@lab.test"]},
    "error_handling": "hard", "submitted_at": "2026-11-21T10:00:00Z", "error_reasons": [],
}


# --- Grid Engine's times and durations ----------------------------------------------------------------

@pytest.mark.parametrize("typed, sent", [
    ("202611221400", "2026-11-22T14:00:00Z"),  # CCYYMMDDhhmm
    ("202611221400.30", "2026-11-22T14:00:30Z"),  # .SS
    ("2611221400", "2026-11-22T14:00:00Z"),  # YY: 20YY
    ("12011200", "2026-12-01T12:00:00Z"),  # MMDDhhmm: this year (NOW's, in UTC)
    ("2026-11-22T15:00:00+01:00", "2026-11-22T15:00:00+01:00"),  # RFC 3339 goes as typed
    ("2026-11-22 15:00 UTC", "2026-11-22T15:00:00Z"),  # as the CLI shows a time
    ("2026-11-22 15:00:30 UTC", "2026-11-22T15:00:30Z"),
    ("2026-11-22 15:00 CET", "2026-11-22 15:00 CET"),  # another zone: the server refuses it, naming the field
    ("tomorrow", "tomorrow"),  # the server names the field when it cannot read it
])
def test_times_in_grid_engine_form_become_rfc_3339(typed, sent):
    assert client_advance.ar_time(typed, NOW) == sent


@pytest.mark.parametrize("typed", ["202613011200", "202611311200", "202611222400", "202611221460",
                                   "202611221400.61"])
def test_impossible_grid_engine_times_are_usage_errors(typed):
    with pytest.raises(argparse.ArgumentTypeError, match="no such time"):
        client_advance.ar_time(typed, NOW)


@pytest.mark.parametrize("typed, sent", [
    ("4:00:00", "14400"), ("1:30:15", "5415"), ("1::1", "3601"), ("::30", "30"),
    ("2:30", "150"),  # Grid Engine's [[h:]m:]s: m:s
    ("90", "90"), ("0090", "90"),  # seconds
    ("4h", "4h"), ("PT4H", "PT4H"), ("1d12h", "1d12h"), ("unlimited", "unlimited"),  # lablease's: as typed
])
def test_durations(typed, sent):
    assert client_advance.ar_duration(typed) == sent


def test_qrstat_durations_are_hours_minutes_seconds():
    assert [client_advance.hms(s) for s in (0, 59, 3600, 5415, 90061.4, None)] == [
        "00:00:00", "00:00:59", "01:00:00", "01:30:15", "25:01:01", None]
    assert client_advance.duration_of({"start": "2026-11-22T14:00:00Z", "end": "2026-11-22T15:30:00Z"}) == 5400


# --- -l ------------------------------------------------------------------------------------------------

def test_simple_requirements_are_leaves_joined_with_and():
    assert client_advance.requirement("arch=x86_64,memory>=2048") == {"and": [
        {"field": "arch", "op": "=", "value": "x86_64"}, {"field": "memory", "op": ">=", "value": 2048}]}
    assert client_advance.requirement("hostname!=a.lab.test") == {"field": "hostname", "op": "!=", "value": "a.lab.test"}
    ops = [client_advance.requirement(f"cpu_count{op}4")["op"] for op in ("=", "==", "!=", ">", ">=", "<", "<=")]
    assert ops == ["=", "=", "!=", ">", ">=", "<", "<="]


def test_grid_engine_names_units_and_attributes():
    assert client_advance.requirement("mem_total>=2G,num_proc>4") == {"and": [
        {"field": "memory", "op": ">=", "value": 2048}, {"field": "cpu_count", "op": ">", "value": 4}]}
    assert client_advance.requirement("h=a.lab.test")["field"] == "hostname"
    assert client_advance.requirement("memory<512M")["value"] == 512
    # any other name is a system attribute (key_value), as is key_value[KEY]
    assert client_advance.requirement("CPUMODEL=Xeon") == {"field": "key_value", "key": "CPUMODEL", "op": "=",
                                                       "value": "Xeon"}
    assert client_advance.requirement("key_value[GPU MODEL]!=none") == {"field": "key_value", "key": "GPU MODEL",
                                                                    "op": "!=", "value": "none"}
    assert client_advance.requirement("pool=") == {"field": "pool", "op": "=", "value": ""}  # in no pool


def test_json_requirements_go_as_given():
    tree = {"or": [{"field": "arch", "op": "=", "value": "aarch64"}, {"field": "lab", "op": "like", "value": "br%"}]}
    assert client_advance.requirement(json.dumps(tree)) == tree


@pytest.mark.parametrize("typed, says", [
    ("arch", "is not NAME=VALUE"), ("=x86_64", "is not NAME=VALUE"), ("memory>=lots", "whole number"),
    ("cpu_count=4G", "whole number"), ("key_value=3", "needs a key"), ("arch[x]=y", "only key_value"),
    ("{not json", "not JSON"), ("[1, 2]", "is not NAME=VALUE"), (",", "empty"),
])
def test_bad_requirements(typed, says):
    with pytest.raises(argparse.ArgumentTypeError, match=re.escape(says)):
        client_advance.requirement(typed)


def test_every_l_holds_and_reads_back():
    trees = [client_advance.requirement("arch=x86_64,memory>=2048"), client_advance.requirement('{"field": "lab", "op": "=",'
                                                                                        ' "value": "brno"}')]
    combined = client_advance.combine(trees)
    assert [leaf["field"] for leaf in combined["and"]] == ["arch", "memory", "lab"]
    assert client_advance.combine([trees[1]]) == trees[1] and client_advance.combine(None) is None
    assert client_advance.describe(SAMPLE["requires"]) == \
        "arch = x86_64 and (memory >= 2048 or not (key_value[GPU] = yes))"


# --- the command line ------------------------------------------------------------------------------------

def test_qrsub_options_become_the_request_body():
    args = parse("ar", "qrsub", "-a", "202611221400", "-e", "202611221800", "-d", "4:00:00", "-N", "nightly",
                 "-A", "perf-team", "-l", "arch=x86_64,memory>=2048", "-l", "lab=brno", "-q", "perf,fast",
                 "-q", "spare", "-pe", "smp", "2", "-u", "alice,@qe", "-m", "b,e", "-M", "a@lab.test,b@lab.test",
                 "-he", "yes", "-w", "v")
    assert args.handler is client_advance.create
    assert client_advance.create_body(args) == {
        "name": "nightly", "account": "perf-team", "start": "2026-11-22T14:00:00Z", "end": "2026-11-22T18:00:00Z",
        "duration": "14400",
        "requires": {"and": [{"field": "arch", "op": "=", "value": "x86_64"},
                             {"field": "memory", "op": ">=", "value": 2048}, {"field": "lab", "op": "=",
                                                                              "value": "brno"}]},
        "pools": ["perf", "fast", "spare"], "count": 2, "acl": ["alice", "@qe"],
        "mail": {"events": "be", "to": ["a@lab.test", "b@lab.test"]}, "error_handling": "hard",
        "validate_only": True}


def test_long_options_and_defaults():
    args = parse("ar", "create", "--start", "2026-11-22T14:00:00Z", "--duration", "4h", "--host", "a.lab.test",
                 "--host", "b.lab.test,c.lab.test", "--count", "3", "--mail", "n", "--error-handling", "soft",
                 "--validate", "--json")
    assert args.format == "json"
    assert client_advance.create_body(args) == {
        "start": "2026-11-22T14:00:00Z", "duration": "4h", "hosts": ["a.lab.test", "b.lab.test", "c.lab.test"],
        "count": 3, "mail": {"events": "n"}, "error_handling": "soft", "validate_only": True}
    # nothing but an end: start is the server's (now); -w e and n reserve
    assert client_advance.create_body(parse("ar", "create", "-e", "202611221800", "-w", "e")) == {
        "end": "2026-11-22T18:00:00Z"}


def test_count_and_pe_must_agree():
    assert client_advance.create_body(parse("ar", "create", "-d", "60", "--count", "2", "-pe", "mpi", "2"))["count"] == 2
    with pytest.raises(client_advance.ClientError) as refused:
        client_advance.create_body(parse("ar", "create", "-d", "60", "--count", "2", "-pe", "mpi", "3"))
    assert refused.value.status == ExitStatus.USAGE


@pytest.mark.parametrize("argv, says", [
    (("-pe", "smp"), "expected 2 arguments"), (("-pe", "smp", "0"), "whole number of systems"),
    (("--count", "two"), "whole number of systems"), (("-m", "bx"), "-m takes n"), (("-m", "bn"), "-m takes n"),
    (("-he", "maybe"), "-he takes yes or no"), (("-w", "x"), "invalid choice"),
    (("-a", "202611310000"), "no such time"), (("-l", "arch"), "is not NAME=VALUE"),
])
def test_bad_qrsub_options_are_usage_errors(capsys, argv, says):
    assert says in usage_error(capsys, "ar", "create", *argv)


def test_qrstat_qrdel_qralter_and_their_grid_engine_options():
    args = parse("ar", "qrstat", "-u", "*", "-xml")
    assert (args.handler, args.user, args.format, args.ar_id) == (client_advance.listing, "*", "xml", None)
    args = parse("--json", "ar", "qrstat", "-ar", "7", "-explain")
    assert (args.format, args.ar_id, args.explain) == ("json", "7", True)
    args = parse("ar", "show", "nightly", "--explain")
    assert (args.handler, args.ref, args.explain, args.format) == (client_advance.show, "nightly", True, None)
    args = parse("ar", "qrdel", "7", "nightly", "-f")
    assert (args.handler, args.refs, args.force) == (client_advance.delete, ["7", "nightly"], True)
    args = parse("ar", "qralter", "7", "-e", "202611222000", "-d", "1:00:00", "-u", "bob", "-N", "n2", "-m", "a",
                 "-M", "x@lab.test")
    assert (args.handler, args.end, args.duration, args.acl, args.name, args.mail, args.mail_to) == (
        client_advance.modify, "2026-11-22T20:00:00Z", "3600", ["bob"], "n2", "a", ["x@lab.test"])
    assert parse("ar", "accounting", "7", "--json").handler is client_advance.accounting


def test_ar_needs_an_action(capsys):
    assert "required" in usage_error(capsys, "ar")
    assert "ID|NAME" in usage_error(capsys, "ar", "delete")


# --- what is shown ------------------------------------------------------------------------------------

def test_show_block(schema):
    lines = client_advance.AR.render({**SAMPLE, "state": "E", "error_reasons": ["b.lab.test is broken"],
                                 "explain": ["b.lab.test is broken (condition broken since 2026-11-22T15:00:00Z)"]},
                                None).splitlines()
    assert lines[:9] == ["id:              7", "name:            nightly-perf", "owner:           alice",
                         "account:         perf-team", "state:           E (error)",
                         "submitted:       2026-11-21 10:00 UTC", "start:           2026-11-22 14:00 UTC",
                         "end:             2026-11-22 18:00 UTC", "duration:        04:00:00"]
    assert "systems:         a.lab.test, b.lab.test" in lines
    assert "requires:        arch = x86_64 and (memory >= 2048 or not (key_value[GPU] = yes))" in lines
    assert "mail:            bea (begin, end, error)" in lines and "mail to:         qe@lab.test" in lines
    assert "error handling:  hard" in lines and "error:           b.lab.test is broken" in lines
    assert lines[-1] == "explain:         b.lab.test is broken (condition broken since 2026-11-22 15:00 UTC)"


def test_list_table_has_qrstats_columns():
    lines = client_advance.AR.render([SAMPLE, {**SAMPLE, "id": 8, "name": None, "state": "r"}], None).splitlines()
    assert lines == [
        "AR-ID  NAME          OWNER  STATE  START                 END                   DURATION",
        "7      nightly-perf  alice  w      2026-11-22 14:00 UTC  2026-11-22 18:00 UTC  04:00:00",
        "8      -             alice  r      2026-11-22 14:00 UTC  2026-11-22 18:00 UTC  04:00:00"]


def test_listing_xml_is_the_summary_and_valid(schema):
    document = valid(schema, client_advance.AR.render([SAMPLE, {**SAMPLE, "id": 8, "name": None}], "xml"))
    assert document.tag == "qrstat"
    first, second = document.findall("ar_summary")
    assert [child.tag for child in first] == ["id", "name", "owner", "state", "start_time", "end_time", "duration"]
    assert (first.findtext("id"), first.findtext("end_time"), first.findtext("duration")) == (
        "7", "2026-11-22T18:00:00Z", "04:00:00")
    assert second.find("name").text is None  # qrstat's empty name
    assert valid(schema, client_advance.AR.render([], "xml")).findall("ar_summary") == []


def test_one_reservation_xml_is_in_full_and_valid(schema):
    shown = {**SAMPLE, "name": None, "account": None, "state": "E", "error_reasons": ["b.lab.test is broken"],
             "explain": ["b.lab.test is broken"], "mail": {"events": "", "to": ["nobody"]}}
    summary = valid(schema, client_advance.AR.render(shown, "xml")).find("ar_summary")
    assert summary.find("account") is None and summary.findtext("submission_time") == "2026-11-21T10:00:00Z"
    top = summary.find("resource_list")
    assert [(c.tag, c.get("name"), c.get("op"), c.get("value")) for c in top] == [
        ("resource", "arch", "=", "x86_64"), ("or", None, None, None)]
    negated = top.find("or/not/resource")
    assert (negated.get("name"), negated.get("key"), negated.get("value")) == ("key_value", "GPU", "yes")
    assert [(g.get("queue_instance"), g.get("slots")) for g in summary.find("granted_slots_list")] == [
        ("a.lab.test", "1"), ("b.lab.test", "1")]
    assert [a.get("user") for a in summary.find("acl_list")] == ["alice", "@qe"]
    assert [(m.get("user"), m.get("host")) for m in summary.find("mail_list")] == [("nobody", None)]
    assert summary.findtext("mail_options") == ""
    assert (summary.findtext("count"), summary.findtext("error_handling")) == ("2", "hard")
    assert [m.text for m in summary.find("error_reasons")] == ["b.lab.test is broken"]
    assert [m.text for m in summary.find("explain")] == ["b.lab.test is broken"]
    # a minimal answer is valid too; and the schema is not a rubber stamp
    valid(schema, client_advance.qrstat_xml([{"id": 1, "owner": "a", "state": "x", "start": "2026-11-22T14:00:00Z",
                                         "end": "2026-11-22T15:00:00Z"}], detailed=True))
    for broken in ({**shown, "state": "q"}, {**shown, "id": 0}, {**shown, "error_handling": "maybe"}):
        with pytest.raises(etree.DocumentInvalid):
            valid(schema, client_advance.AR.render(broken, "xml"))


def test_accounting_table_and_totals():
    text = client_advance.ACCOUNTING.render({
        "ar": 7, "reserved_seconds": 28800.0, "used_seconds": 9000.0,
        "systems": [{"system": "a.lab.test", "reserved_seconds": 14400.0, "used_seconds": 9000.0},
                    {"system": "b.lab.test", "reserved_seconds": 14400.0, "used_seconds": 0.0}],
        "jobs": [{"job": 3, "recipe": 5, "system": "a.lab.test", "seconds": 5400.0}],
        "reservations": [{"reservation": 9, "user": "bob", "system": "a.lab.test", "seconds": 3600.0}]}, None)
    assert text.splitlines() == [
        "SYSTEM      RESERVED  USED      USED%",
        "a.lab.test  04:00:00  02:30:00  62.5%",
        "b.lab.test  04:00:00  00:00:00  0%",
        "total       08:00:00  02:30:00  31.2%",
        "",
        "JOB  RECIPE  SYSTEM      USED",
        "3    5       a.lab.test  01:30:00",
        "",
        "RESERVATION  USER  SYSTEM      USED",
        "9            bob   a.lab.test  01:00:00"]


# --- against a stub of the API ------------------------------------------------------------------------------

class Stub(BaseHTTPRequestHandler):
    """Answers (method, path) from `answers` with (status, JSON body) and records every request."""

    answers: dict = {}
    seen: list = []

    def answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        sent = json.loads(self.rfile.read(length)) if length else None
        url = urlsplit(self.path)
        self.seen.append((self.command, url.path, parse_qs(url.query), sent))
        status, payload = self.answers.get((self.command, url.path), (404, {
            "type": "urn:lablease:problem:not-found", "title": "Not found", "status": 404, "detail": "no such thing"}))
        data = b"" if payload is None else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/problem+json" if status >= 400 else "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PATCH = do_DELETE = answer

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def stub_url():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join()


@pytest.fixture
def stub(stub_url):
    """run(answers, *argv) -> (exit status, stdout, stderr, requests seen)."""

    def run(answers: dict, *argv: str):
        Stub.answers, Stub.seen = {(m, "/api/v1" + p): a for (m, p), a in answers.items()}, []
        out, err = io.StringIO(), io.StringIO()
        code = main(list(argv), env={"LABLEASE_URL": stub_url, "LABLEASE_TOKEN": "t"}, stdout=out, stderr=err)
        return int(code), out.getvalue(), err.getvalue(), [(m, p.removeprefix("/api/v1"), q, b)
                                                           for m, p, q, b in Stub.seen]

    return run


def problem(status: int, detail: str, **extra) -> dict:
    return {"type": "about:blank", "title": "t", "status": status, "detail": detail, **extra}


def test_granted(stub, schema):
    code, out, err, seen = stub({("POST", "/advance-reservations"): (201, SAMPLE)},
                                "ar", "create", "-a", "202611221400", "-d", "4:00:00", "-l", "arch=x86_64", "-pe",
                                "smp", "2")
    assert (code, err) == (0, "")
    assert out.splitlines()[:3] == ["Your advance reservation 7 has been granted", "id:              7",
                                    "name:            nightly-perf"]
    assert seen == [("POST", "/advance-reservations", {}, {
        "start": "2026-11-22T14:00:00Z", "duration": "14400", "requires": {"field": "arch", "op": "=",
                                                                          "value": "x86_64"}, "count": 2})]
    code, out, _, _ = stub({("POST", "/advance-reservations"): (201, SAMPLE)}, "ar", "create", "-d", "60", "--json")
    assert (code, json.loads(out)) == (0, SAMPLE)
    _, out, _, _ = stub({("POST", "/advance-reservations"): (201, SAMPLE)}, "ar", "create", "-d", "60", "--xml")
    assert valid(schema, out).findtext("ar_summary/id") == "7"


def test_validate_only_creates_nothing_and_says_where(stub):
    answer = {"grantable": True, "systems": ["a.lab.test", "b.lab.test"]}
    code, out, err, seen = stub({("POST", "/advance-reservations"): (200, answer)},
                                "ar", "qrsub", "-d", "1:00:00", "--count", "2", "-w", "v")
    assert (code, err) == (0, "")
    assert out == "Your advance reservation could be granted on a.lab.test, b.lab.test (-w v: nothing was created)\n"
    assert seen[0][3] == {"duration": "3600", "count": 2, "validate_only": True}
    code, out, _, _ = stub({("POST", "/advance-reservations"): (200, answer)}, "ar", "create", "-d", "60",
                           "--validate", "--json")
    assert (code, json.loads(out)) == (0, answer)


def test_cannot_be_granted_prints_the_reasons_and_exits_5(stub):
    refusal = problem(409, "cannot grant 2 system(s): 1 eligible", reasons={
        "ruled_out": {"arch = x86_64": 3, "memory >= 2048": 5},
        "busy": [{"system": "a.lab.test", "from": "2026-11-22T13:00:00Z", "until": "2026-11-22T16:00:00Z"},
                 {"system": "b.lab.test", "from": "2026-11-22T10:00:00Z", "until": None}]})
    code, out, err, _ = stub({("POST", "/advance-reservations"): (409, refusal)},
                             "ar", "create", "-d", "4h", "--count", "2", "-l", "arch=x86_64,memory>=2048")
    assert (code, err) == (ExitStatus.CONFLICT, "lablease: cannot grant 2 system(s): 1 eligible\n")
    assert out.splitlines() == [
        "ruled out:  5 system(s): memory >= 2048",
        "ruled out:  3 system(s): arch = x86_64",
        "busy:       a.lab.test from 2026-11-22 13:00 UTC until 2026-11-22 16:00 UTC",
        "busy:       b.lab.test from 2026-11-22 10:00 UTC until further notice"]
    code, out, _, _ = stub({("POST", "/advance-reservations"): (409, refusal)}, "ar", "create", "-d", "4h", "--json")
    assert (code, json.loads(out)) == (ExitStatus.CONFLICT, refusal)
    # -w v refuses the same way
    code, out, _, _ = stub({("POST", "/advance-reservations"): (409, refusal)}, "ar", "create", "-d", "4h", "-w", "v")
    assert code == ExitStatus.CONFLICT and out.startswith("ruled out:")


def test_the_limit_exits_25_as_qrsub_does(stub):
    limit = problem(429, "3 advance reservations are active, the limit (max_advance_reservations) is 3")
    code, out, err, _ = stub({("POST", "/advance-reservations"): (429, limit)}, "ar", "create", "-d", "4h")
    assert (code, out, err) == (25, "", f"lablease: {limit['detail']}\n")
    assert ExitStatus.LIMIT == 25
    for status, exit_status in ((403, ExitStatus.FORBIDDEN), (422, ExitStatus.INVALID)):
        code, out, _, _ = stub({("POST", "/advance-reservations"): (status, problem(status, "no"))},
                               "ar", "create", "-d", "4h")
        assert (code, out) == (exit_status, "")


def test_list_and_show_requests(stub):
    answers = {("GET", "/advance-reservations"): (200, [SAMPLE]), ("GET", "/advance-reservations/nightly-perf"):
               (200, {**SAMPLE, "explain": []}), ("GET", "/advance-reservations/7"): (200, SAMPLE)}
    code, out, _, seen = stub(answers, "ar", "list", "-u", "*")
    assert code == 0 and out.splitlines()[0].split() == ["AR-ID", "NAME", "OWNER", "STATE", "START", "END",
                                                         "DURATION"]
    assert seen == [("GET", "/advance-reservations", {"user": ["*"]}, None)]
    _, _, _, seen = stub(answers, "ar", "list")
    assert seen[0][2] == {}  # the server's default: mine
    code, out, _, seen = stub(answers, "ar", "show", "nightly-perf", "--explain")
    assert code == 0 and seen[0][2] == {"explain": ["true"]} and "explain:         -" in out
    code, out, _, seen = stub(answers, "ar", "qrstat", "-ar", "7")
    assert code == 0 and seen[0][:3] == ("GET", "/advance-reservations/7", {}) and "duration:        04:00:00" in out


def test_delete_each_in_turn(stub):
    busy = problem(409, "advance reservation 8 has bound work: job 3")
    answers = {("DELETE", "/advance-reservations/7"): (204, None), ("DELETE", "/advance-reservations/8"): (409, busy)}
    code, out, err, seen = stub(answers, "ar", "qrdel", "7", "8", "9")
    assert (code, out) == (ExitStatus.CONFLICT, "deleted advance reservation 7\n")
    assert err == "lablease: advance reservation 8 has bound work: job 3 (--force aborts its work first)\n"
    assert [s[1] for s in seen] == ["/advance-reservations/7", "/advance-reservations/8"]
    answers[("DELETE", "/advance-reservations/8")] = (204, None)
    code, out, _, seen = stub(answers, "ar", "delete", "7", "8", "--force")
    assert (code, out) == (0, "deleted advance reservation 7\ndeleted advance reservation 8\n")
    assert all(s[2] == {"force": ["true"]} for s in seen)
    code, out, err, _ = stub(answers, "ar", "delete", "9", "--json")
    assert (code, out, err) == (ExitStatus.NOT_FOUND, "", "lablease: no such thing\n")


def test_modify_by_name_and_accounting(stub):
    answers = {("GET", "/advance-reservations/nightly-perf"): (200, SAMPLE),
               ("PATCH", "/advance-reservations/7"): (200, {**SAMPLE, "name": "n2"}),
               ("GET", "/advance-reservations/7/accounting"): (200, {
                   "ar": 7, "reserved_seconds": 3600.0, "used_seconds": 0.0, "systems": [], "jobs": [],
                   "reservations": []})}
    code, out, _, seen = stub(answers, "ar", "qralter", "nightly-perf", "-N", "n2", "-d", "2:00:00", "-m", "ea",
                              "-M", "x@lab.test")
    assert code == 0 and "name:            n2" in out
    assert seen[1] == ("PATCH", "/advance-reservations/7", {}, {
        "duration": "7200", "name": "n2", "mail": {"events": "ea", "to": ["x@lab.test"]}})
    code, out, err, seen = stub(answers, "ar", "modify", "7")
    assert (code, err, seen) == (ExitStatus.USAGE, "lablease: nothing to change: give -e, -d, -u, -N, -m, -M or --release\n", [])
    code, out, _, _ = stub(answers, "ar", "accounting", "7")
    assert code == 0 and out.splitlines()[-1] == "total   01:00:00  00:00:00  0%"


# --- against the real server ----------------------------------------------------------------------------

def minute(days: int, hours: int = 0) -> datetime:
    """A whole minute that many days ahead: each test books its own window."""
    moment = datetime.now(timezone.utc).replace(second=0, microsecond=0)
    return moment + timedelta(days=days, hours=hours)


def ge(moment: datetime) -> str:
    return moment.strftime("%Y%m%d%H%M")


def rfc(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def people(moment: datetime) -> str:
    """A time as the output for people writes it."""
    return moment.strftime("%Y-%m-%d %H:%M UTC")


def block(text: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        if ":  " in line:
            label, _, value = line.partition(":")
            found.setdefault(label.strip(), []).append(value.strip())
    return found


def granted(result) -> int:
    match = re.fullmatch(r"Your advance reservation (\d+) has been granted", result.lines[0])
    assert match, result
    return int(match[1])


def one_line(result, code: int) -> None:
    assert result.code == code, result
    assert result.err.startswith("lablease: ") and result.err.count("\n") == 1, result.err


@LIVE
def test_live_create_list_show_delete(cli, add_system, schema):
    a, b = add_system("arl1.lab.test", lab="ar-lab-1"), add_system("arl2.lab.test", lab="ar-lab-1")
    start = minute(40)
    result = cli.ok("ar", "create", "-a", ge(start), "-d", "2:00:00", "-N", "ar-cli-1", "-A", "perf", "-l",
                    "lab=ar-lab-1", "-pe", "smp", "2", "-m", "be", "-M", "qe@lab.test", "-u", "admin,bob")
    ar_id = granted(result)
    fields = block(result.out)
    assert fields["state"] == ["w (waiting)"] and fields["start"] == [people(start)]
    assert fields["end"] == [people(start + timedelta(hours=2))] and fields["duration"] == ["02:00:00"]
    assert sorted(fields["systems"][0].split(", ")) == [a, b] and fields["acl"] == ["admin, bob"]
    rows = [line.split("  ") for line in cli.ok("ar", "list").lines]
    rows = [[cell.strip() for cell in row if cell.strip()] for row in rows]
    assert rows[0] == ["AR-ID", "NAME", "OWNER", "STATE", "START", "END", "DURATION"]
    assert [str(ar_id), "ar-cli-1", "admin", "w", people(start), people(start + timedelta(hours=2)), "02:00:00"] in rows
    listed = valid(schema, cli.ok("ar", "list", "-u", "*", "--xml").out)
    assert str(ar_id) in [s.findtext("id") for s in listed.findall("ar_summary")]
    shown = json.loads(cli.ok("ar", "show", "ar-cli-1", "--json").out)
    assert (shown["id"], shown["count"], shown["account"], shown["mail"]) == (
        ar_id, 2, "perf", {"events": "be", "to": ["qe@lab.test"]})
    summary = valid(schema, cli.ok("ar", "qrstat", "-ar", str(ar_id), "-xml").out).find("ar_summary")
    assert sorted(g.get("queue_instance") for g in summary.find("granted_slots_list")) == [a, b]
    assert summary.find("resource_list/resource").get("value") == "ar-lab-1"
    assert cli.ok("ar", "delete", "ar-cli-1").out == "deleted advance reservation ar-cli-1\n"
    after = cli("ar", "show", str(ar_id), "--json")
    assert after.code == ExitStatus.NOT_FOUND or json.loads(after.out)["state"] == "d"


@LIVE
def test_live_validate_only_creates_nothing(cli, add_system):
    fqdn = add_system("arl3.lab.test")
    result = cli.ok("ar", "create", "-a", ge(minute(41)), "-d", "1:00:00", "--host", fqdn, "-N", "ar-cli-v",
                    "-w", "v")
    assert result.out == f"Your advance reservation could be granted on {fqdn} (-w v: nothing was created)\n"
    assert "ar-cli-v" not in [a["name"] for a in json.loads(cli.ok("ar", "list", "--json").out)]


@LIVE
def test_live_refusals(cli, add_system):
    fqdn = add_system("arl4.lab.test")
    start = minute(42)
    cli.ok("reserve", fqdn, "--start", rfc(start), "--end", rfc(start + timedelta(hours=3)), user="bob")
    busy = cli("ar", "create", "-a", ge(start + timedelta(hours=1)), "-d", "1:00:00", "--host", fqdn)
    one_line(busy, ExitStatus.CONFLICT)
    assert any(line.startswith("busy:") and fqdn in line for line in busy.lines), busy
    nothing = cli("ar", "create", "-a", ge(start), "-d", "1:00:00", "-l", "lab=no-such-lab-for-ar")
    one_line(nothing, ExitStatus.CONFLICT)
    assert any(line.startswith("ruled out:") for line in nothing.lines), nothing
    dissonant = cli("ar", "create", "-a", ge(start), "-e", ge(start + timedelta(hours=1)), "-d", "2:00:00",
                    "--host", fqdn)
    one_line(dissonant, ExitStatus.INVALID)
    forbidden = cli("ar", "create", "-a", ge(start), "-d", "1:00:00", "--host", fqdn, user="bob")
    one_line(forbidden, ExitStatus.FORBIDDEN)
    one_line(cli("ar", "show", "999999"), ExitStatus.NOT_FOUND)


@LIVE
def test_live_modify_explain_accounting(cli, add_system):
    fqdn = add_system("arl5.lab.test")
    start = minute(43)
    ar_id = granted(cli.ok("ar", "create", "-a", ge(start), "-d", "1:00:00", "--host", fqdn, "-N", "ar-cli-m"))
    changed = block(cli.ok("ar", "modify", "ar-cli-m", "-e", ge(start + timedelta(hours=3)), "-N", "ar-cli-m2",
                           "-u", "admin,carol").out)
    assert (changed["name"], changed["end"], changed["acl"]) == (
        ["ar-cli-m2"], [people(start + timedelta(hours=3))], ["admin, carol"])
    explained = json.loads(cli.ok("ar", "show", str(ar_id), "--explain", "--json").out)
    assert explained["state"] == "w" and isinstance(explained["explain"], list)
    assert block(cli.ok("ar", "show", str(ar_id), "--explain").out)["explain"] in (explained["explain"], ["-"])
    accounting = cli.ok("ar", "accounting", "ar-cli-m2")
    assert accounting.lines[0].split() == ["SYSTEM", "RESERVED", "USED", "USED%"]
    # reserved so far: the window is still ahead
    assert [line.split() for line in accounting.lines[1:]] == [[fqdn, "00:00:00", "00:00:00", "-"],
                                                               ["total", "00:00:00", "00:00:00", "-"]]
    as_json = json.loads(cli.ok("ar", "accounting", str(ar_id), "--json").out)
    assert (as_json["ar"], as_json["reserved_seconds"], as_json["systems"][0]["system"]) == (ar_id, 0, fqdn)
    cli.ok("ar", "delete", str(ar_id), "--force")


@pytest.fixture(scope="module")
def no_ars(tmp_path_factory):
    """A second server where max_advance_reservations is 0: every AR is refused with 429."""
    live = LiveServer(tmp_path_factory.mktemp("no-ars"), settings={"max_advance_reservations": 0}, workers=1,
                      threads=2, run_worker=False).start()
    try:
        yield live
    finally:
        live.stop()


@LIVE
def test_live_the_limit_exits_25(no_ars):
    out, err = io.StringIO(), io.StringIO()
    code = main(["ar", "create", "-d", "1:00:00"], env={"LABLEASE_URL": no_ars.url,
                                                          "LABLEASE_TOKEN": no_ars.tokens["admin"]},
                stdout=out, stderr=err)
    assert (code, out.getvalue()) == (25, "")
    assert err.getvalue().startswith("lablease: ") and err.getvalue().count("\n") == 1
