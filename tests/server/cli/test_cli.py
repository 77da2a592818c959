"""`lablease` against a real server: what a user sees on stdout, stderr and in the exit status."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import requests

from lablease.cli import client_commands
from lablease.cli.client_status import ExitStatus
from lablease.domain.times import format_when


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value)


def people(value: str) -> str:
    """An RFC 3339 time of the API (or --json) as the CLI's human output writes it (docs/cli.md)."""
    return format_when(parse_time(value))


def read_people(value: str) -> datetime:
    """A time of the CLI's human output (`2026-11-24 19:15 UTC`), read back."""
    return datetime.strptime(value, "%Y-%m-%d %H:%M UTC").replace(tzinfo=timezone.utc)


def row_of(result, first: str) -> list[str]:
    """The table row whose first cell is `first`, split on the column gaps."""
    for line in result.lines[1:]:
        cells = [cell for cell in line.split("  ") if cell.strip()]
        if cells and cells[0].strip() == first:
            return [cell.strip() for cell in cells]
    raise AssertionError(f"no row {first!r} in:\n{result.out}")


# --- identity and listings -------------------------------------------------------------------

def test_whoami_as_a_block_json_and_xml(cli):
    assert cli.ok("whoami", user="carol").lines == ["name:    carol", "admin:   no", "groups:  lab-team"]
    me = json.loads(cli.ok("whoami", "--json").out)
    assert {key: me[key] for key in ("name", "admin", "groups")} == {"name": "admin", "admin": True, "groups": ["arusers"]}  # the first admin joins arusers
    root = ET.fromstring(cli.ok("--xml", "whoami", user="carol").out)
    assert (root.tag, root.findtext("name"), [g.text for g in root.find("groups")]) == ("user", "carol", ["lab-team"])


def test_systems_table_has_the_documented_columns(cli, add_system):
    add_system("list1.lab.test", "aarch64", lab="brno")
    result = cli.ok("systems")
    assert result.lines[0].split() == ["FQDN", "ARCH", "LAB", "CONDITION", "USAGE", "RESERVED", "BY", "UNTIL", "HEALTH"]
    assert row_of(result, "list1.lab.test") == ["list1.lab.test", "aarch64", "brno", "manual", "idle", "-", "-",
                                                "unknown"]
    header = result.lines[0]
    line = next(line for line in result.lines if line.startswith("list1.lab.test"))
    assert line.index("aarch64") == header.index("ARCH")  # aligned under its header
    assert line.index("manual") == header.index("CONDITION")


def test_systems_filters_and_machine_formats(cli, add_system):
    add_system("filter1.lab.test", "s390x", lab="raleigh")
    add_system("filter2.lab.test", "s390x", lab="westford", condition="broken")
    as_json = json.loads(cli.ok("systems", "--arch", "s390x", "--json").out)
    assert sorted(s["fqdn"] for s in as_json) == ["filter1.lab.test", "filter2.lab.test"]
    assert [s["fqdn"] for s in json.loads(cli.ok("systems", "--arch", "s390x", "--lab", "raleigh",
                                                   "--json").out)] == ["filter1.lab.test"]
    assert [s["fqdn"] for s in json.loads(cli.ok("--json", "systems", "--arch", "s390x",
                                                   "--condition", "broken").out)] == ["filter2.lab.test"]
    root = ET.fromstring(cli.ok("systems", "--arch", "s390x", "--xml").out)
    assert root.tag == "systems"
    assert sorted(s.findtext("fqdn") for s in root.findall("system")) == ["filter1.lab.test", "filter2.lab.test"]
    assert root.find("system/reservation").get("null") == "true"


def test_systems_free_window_and_mine(cli, add_system):
    add_system("free1.lab.test", "ppc64le")
    add_system("free2.lab.test", "ppc64le")
    cli.ok("reserve", "free1.lab.test", "--duration", "2h", user="bob")
    later = (datetime.now().astimezone() + timedelta(hours=1)).isoformat(timespec="seconds")
    free = json.loads(cli.ok("systems", "--arch", "ppc64le", "--free-from", later, "--json").out)
    assert [s["fqdn"] for s in free] == ["free2.lab.test"]
    mine = cli.ok("systems", "--mine", user="bob")
    assert [line.split()[0] for line in mine.lines[1:]] == ["free1.lab.test"]
    assert row_of(mine, "free1.lab.test")[5] == "bob"
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", row_of(mine, "free1.lab.test")[6])


# --- reservations ----------------------------------------------------------------------------

def test_reserve_prints_the_reservation(cli, add_system):
    add_system("res1.lab.test")
    result = cli.ok("reserve", "res1.lab.test", "--duration", "4h", user="bob")
    fields = dict(line.split(":", 1) for line in result.lines)
    assert fields["system"].strip() == "res1.lab.test" and fields["state"].strip() == "active"
    assert int(fields["id"]) > 0
    end = read_people(fields["end"].strip())  # to the minute, as people read it
    assert timedelta(hours=3, minutes=58) < end - datetime.now().astimezone() <= timedelta(hours=4)


def test_conflict_exits_5_naming_the_holder(cli, add_system):
    add_system("busy1.lab.test")
    cli.ok("reserve", "busy1.lab.test", "--duration", "1h", user="bob")
    result = cli("reserve", "busy1.lab.test", "--duration", "1h")
    assert result.code == ExitStatus.CONFLICT == 5
    assert result.out == ""
    assert result.err.count("\n") == 1
    assert result.err.startswith("lablease: busy1.lab.test is reserved by bob from ")
    assert " until " in result.err and "Traceback" not in result.err


def test_request_id_makes_reserve_idempotent(cli, add_system):
    add_system("idem1.lab.test")
    first = json.loads(cli.ok("reserve", "idem1.lab.test", "--request-id", "ci-42", "--json", user="bob").out)
    again = json.loads(cli.ok("reserve", "idem1.lab.test", "--request-id", "ci-42", "--json", user="bob").out)
    assert first["id"] == again["id"] and first["request_id"] == "ci-42"


def test_reserve_in_advance_with_an_end(cli, add_system):
    add_system("adv1.lab.test")
    start = (datetime.now().astimezone() + timedelta(days=1)).replace(microsecond=0)
    end = start + timedelta(hours=3)
    reservation = json.loads(cli.ok("reserve", "adv1.lab.test", "--start", start.isoformat(), "--end",
                                    end.isoformat(), "--json").out)
    assert (parse_time(reservation["start"]), parse_time(reservation["end"])) == (start, end)
    assert reservation["state"] == "upcoming"


def test_extend_heartbeat_return_and_list(cli, add_system):
    add_system("life1.lab.test")
    reservation = json.loads(cli.ok("reserve", "life1.lab.test", "--duration", "1h", "--heartbeat", "10m",
                                    "--json", user="bob").out)
    rid = str(reservation["id"])
    extended = json.loads(cli.ok("extend", rid, "--by", "2h", "--json", user="bob").out)
    assert parse_time(extended["end"]) - parse_time(reservation["end"]) == timedelta(hours=2)
    beat = cli.ok("heartbeat", rid, user="bob")
    assert beat.out.startswith(f"reservation {rid}: next heartbeat due by ") and beat.out.strip().endswith(" UTC")
    listed = cli.ok("reservations", "--active", "--system", "life1.lab.test", user="bob")
    assert listed.lines[0].split() == ["ID", "SYSTEM", "USER", "KIND", "STATE", "START", "END"]
    assert row_of(listed, rid)[1:5] == ["life1.lab.test", "bob", "manual", "active"]
    assert cli.ok("return", rid, user="bob").out == f"returned reservation {rid} of life1.lab.test\n"
    assert cli.ok("reservations", "--active", "--system", "life1.lab.test", user="bob").lines[1:] == []
    past = json.loads(cli.ok("reservations", "--system", "life1.lab.test", "--json", user="bob").out)
    assert [(r["id"], r["state"]) for r in past] == [(reservation["id"], "returned")]


def test_extend_to_an_end(cli, add_system):
    add_system("ext2.lab.test")
    reservation = json.loads(cli.ok("reserve", "ext2.lab.test", "--duration", "1h", "--json").out)
    new_end = (parse_time(reservation["end"]) + timedelta(minutes=30)).isoformat()
    extended = cli.ok("extend", str(reservation["id"]), "--end", new_end)
    assert dict(line.split(":", 1) for line in extended.lines)["end"].strip() == \
        format_when(parse_time(reservation["end"]) + timedelta(minutes=30))


def test_a_time_is_taken_back_as_the_cli_shows_it(cli, add_system):
    """The end the CLI printed, typed back as it reads (`2026-11-24 19:15 UTC`), is that minute."""
    add_system("ext3.lab.test")
    made = cli.ok("reserve", "ext3.lab.test", "--duration", "1h")
    shown = dict(line.split(":", 1) for line in made.lines)["end"].strip()
    later = format_when(parse_time(shown.replace(" UTC", ":00Z").replace(" ", "T")) + timedelta(hours=2))
    ident = dict(line.split(":", 1) for line in made.lines)["id"].strip()
    extended = json.loads(cli.ok("extend", ident, "--end", later, "--json").out)
    assert format_when(parse_time(extended["end"])) == later and extended["end"].endswith(":00Z")
    # Held from the old end to the new one, free from then: each time read as the minute it shows.
    assert "ext3.lab.test" not in cli.ok("systems", "--free-from", shown, "--free-until", later).out
    free_then = cli.ok("systems", "--free-from", later, "--free-until", later.replace(" UTC", ":30 UTC"))
    assert "ext3.lab.test" in free_then.out


def test_reservations_are_mine_unless_all_or_user(cli, add_system):
    add_system("who1.lab.test")
    add_system("who2.lab.test")
    bobs = json.loads(cli.ok("reserve", "who1.lab.test", "--json", user="bob").out)
    admins = json.loads(cli.ok("reserve", "who2.lab.test", "--json").out)
    mine = {r["id"] for r in json.loads(cli.ok("reservations", "--json").out)}
    assert admins["id"] in mine and bobs["id"] not in mine
    everybody = {r["id"] for r in json.loads(cli.ok("reservations", "--all", "--json").out)}
    assert {admins["id"], bobs["id"]} <= everybody
    root = ET.fromstring(cli.ok("reservations", "--user", "bob", "--xml").out)
    assert root.tag == "reservations"
    of_bob = {int(r.findtext("id")) for r in root.findall("reservation")}
    assert bobs["id"] in of_bob and admins["id"] not in of_bob


# --- failures: one line on stderr, a distinct exit status -------------------------------------

def test_unknown_system_exits_3(cli):
    result = cli("reserve", "nowhere.lab.test")
    assert result.code == ExitStatus.NOT_FOUND == 3
    assert result.err.startswith("lablease: ") and "nowhere.lab.test" in result.err
    assert result.err == "lablease: no system named nowhere.lab.test\n"
    assert result.err.count("\n") == 1 and result.out == ""


def test_unknown_reservation_exits_3(cli):
    assert cli("return", "999999").code == 3


def test_bad_duration_exits_6_naming_the_field(cli, add_system):
    add_system("bad1.lab.test")
    result = cli("reserve", "bad1.lab.test", "--duration", "soon")
    assert result.code == ExitStatus.INVALID == 6
    assert result.err.startswith("lablease: duration: ") and result.err.count("\n") == 1


def test_bad_time_exits_6_naming_the_field(cli):
    result = cli("systems", "--free-from", "tomorrow-ish")
    assert (result.code, result.err.startswith("lablease: free_from")) == (6, True)


@pytest.mark.parametrize("token", ["wrong-token", None])
def test_bad_or_missing_token_exits_4(cli, server, token):
    env = {"LABLEASE_URL": server.url, **({"LABLEASE_TOKEN": token} if token else {})}
    result = cli("systems", env=env)
    assert result.code == ExitStatus.FORBIDDEN == 4
    assert result.err.count("\n") == 1 and result.err.startswith("lablease: ")
    assert ("LABLEASE_TOKEN" in result.err) == (token is None)


def test_forbidden_exits_4(cli, add_system):
    add_system("forbid1.lab.test")
    reservation = json.loads(cli.ok("reserve", "forbid1.lab.test", "--json").out)
    rid = str(reservation["id"])
    for argv in (["return", rid], ["extend", rid, "--by", "1h"], ["heartbeat", rid]):
        result = cli(*argv, user="bob")
        assert result.code == ExitStatus.FORBIDDEN, argv
        assert result.err.startswith(f"lablease: reservation {rid}: ") and result.err.count("\n") == 1
    def unchanged(listing):  # seconds_left counts down between the two calls
        return [{k: v for k, v in r.items() if k != "seconds_left"} for r in json.loads(listing.out)]
    assert unchanged(cli.ok("reservations", "--system", "forbid1.lab.test", "--active", "--json")) == \
        unchanged(cli.ok("reservations", "--system", "forbid1.lab.test", "--json"))[:1]


def test_unreachable_server_exits_7_naming_the_url(cli, server):
    from tests.support.postgres import free_port

    url = f"http://127.0.0.1:{free_port()}"
    result = cli("systems", env={"LABLEASE_URL": url, "LABLEASE_TOKEN": "x"})
    assert result.code == ExitStatus.UNREACHABLE == 7
    assert result.err == f"lablease: cannot reach the server at {url}: Connection refused\n"


def test_options_win_over_the_environment(cli, server):
    env = {"LABLEASE_URL": "http://127.0.0.1:1", "LABLEASE_TOKEN": server.tokens["bob"]}
    assert json.loads(cli("whoami", "--url", server.url, "--json", env=env).out)["name"] == "bob"
    as_carol = cli("--url", server.url, "--token", server.tokens["carol"], "whoami", "--json", env=env)
    assert json.loads(as_carol.out)["name"] == "carol"


def test_a_url_without_scheme_is_a_usage_error(cli):
    result = cli("systems", "--url", "lab.example.com")
    assert result.code == 2 and "http://" in result.err
    assert result.err == ("lablease: the server URL must start with http:// or https://, not 'lab.example.com' "
                          "(LABLEASE_URL or --url)\n")


@pytest.mark.parametrize("argv", [
    ["reserve"],
    ["reserve", "s1.lab.test", "--duration", "1h", "--end", "2030-01-01T00:00:00Z"],
    ["extend", "3"],
    ["extend", "three", "--by", "1h"],
    ["systems", "--condition", "shiny"],
    ["policy", "grant", "s1.lab.test", "reserve"],
    ["frobnicate"],
    [],
])
def test_usage_errors_exit_2(cli, argv):
    result = cli(*argv)
    assert result.code == ExitStatus.USAGE == 2
    assert result.out == "" and "Traceback" not in result.err
    assert result.err.splitlines()[-1].startswith("lablease")


def test_help_and_version_exit_0_on_stdout(cli):
    result = cli("reserve", "--help")
    assert result.code == 0 and "--heartbeat" in result.out and result.err == ""
    version = cli("--version")
    assert version.code == 0 and version.out.startswith("lablease ")


def test_an_unknown_pool_is_an_error_not_an_empty_list(cli):
    result = cli("systems", "--pool", "no-such-pool")
    assert (result.code, result.out) == (6, "") and "no-such-pool" in result.err
    assert result.err == "lablease: pool: no pool named no-such-pool\n"


def test_heartbeat_of_a_reservation_without_one_exits_6(cli, add_system):
    add_system("nobeat.lab.test")
    reservation = json.loads(cli.ok("reserve", "nobeat.lab.test", "--json").out)
    result = cli("heartbeat", str(reservation["id"]))
    assert result.code == 6 and result.err.startswith("lablease: heartbeat: ")


def test_debug_shows_requests_and_the_traceback(cli):
    result = cli("reserve", "nowhere.lab.test", "--debug")
    assert result.code == 3
    assert "debug: POST " in result.err and "Traceback" in result.err
    assert result.err.splitlines()[-1].startswith("lablease: ")


def test_a_bug_is_one_line_without_debug(cli, monkeypatch):
    def broken(api, args):
        raise RuntimeError("boom")

    monkeypatch.setattr(client_commands, "whoami", broken)
    result = cli("whoami")
    assert result.code == 1 and "Traceback" not in result.err
    assert result.err == "lablease: internal error: RuntimeError: boom (run with --debug for the traceback)\n"
    assert "Traceback" in cli("whoami", "--debug").err


def test_the_installed_console_script(server):
    script = Path(sys.executable).parent / "lablease"
    env = {**os.environ, "LABLEASE_URL": server.url, "LABLEASE_TOKEN": server.tokens["bob"]}
    done = subprocess.run([str(script), "whoami", "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert (done.returncode, json.loads(done.stdout)["name"], done.stderr) == (0, "bob", "")
    env["LABLEASE_TOKEN"] = "nope"
    refused = subprocess.run([str(script), "whoami"], env=env, capture_output=True, text=True, timeout=60)
    assert refused.returncode == 4 and refused.stderr.startswith("lablease: ") and refused.stdout == ""


def test_calendar_url_makes_and_replaces_the_feed_address(cli, server):
    assert cli.ok("calendar-url", user="bob").out.strip() == \
        "no calendar address yet: make one with lablease calendar-url --new"
    first = cli.ok("calendar-url", "--new", user="bob").out.strip()
    assert first.startswith(server.url + "/calendar/bob/cal_") and first.endswith(".ics")
    assert cli.ok("calendar-url", user="bob").out.strip() == first
    feed = requests.get(first, timeout=30)
    assert feed.status_code == 200 and feed.headers["Content-Type"].startswith("text/calendar")
    assert b"BEGIN:VCALENDAR" in feed.content
    second = cli.ok("calendar-url", "--new", "--json", user="bob").out
    assert json.loads(second)["url"] != first and requests.get(first, timeout=30).status_code == 401


def test_reserve_wait_queues_and_block_stays_until_granted(cli, add_system, monkeypatch):
    from lablease.cli import client_jobs

    add_system("wait1.lab.test")
    held = json.loads(cli.ok("reserve", "wait1.lab.test", "--duration", "1h", "--json", user="bob").out)
    queued = cli.ok("reserve", "wait1.lab.test", "--wait", "--duration", "1h", user="carol")
    line = queued.out.strip()
    assert line.startswith("reservation ") and f"waits: position 1, estimated start {people(held['end'])}" in line
    left = cli("reserve", "wait1.lab.test", "--block", "--timeout", "0.2", "--interval", "0.05", user="carol")
    assert left.code == ExitStatus.TIMED_OUT == 9 and "position 2" in left.err  # it stays in the line
    for reservation in json.loads(cli.ok("reservations", "--json", user="carol").out):
        cli.ok("return", str(reservation["id"]), user="carol")  # both leave the line

    returned = []
    monkeypatch.setattr(client_jobs, "sleep", lambda seconds: returned or returned.append(
        cli.ok("return", str(held["id"]), user="bob")))  # the holder gives it back while the CLI waits
    granted = json.loads(cli.ok("reserve", "wait1.lab.test", "--block", "--duration", "1h", "--json").out)
    assert returned and granted["state"] == "active" and granted["system"] == "wait1.lab.test"
