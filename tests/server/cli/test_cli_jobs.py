"""`lablease job ...`, `jobs`, `recipe ...`, `queue` and `distros` against a real server.

Scheduling happens inside the request that submits a job or frees a system,
so no worker is needed. Every job asks for its test's own systems by name
(systems of other tests are `manual` and never scheduled anyway).
"""
from __future__ import annotations

import json
import re
import os
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from datetime import datetime
from pathlib import Path

import pytest

from lablease.cli import client_jobs
from lablease.cli.client_status import ExitStatus
from lablease.domain.times import format_when

FAST = ("--interval", "0.05")


def job_xml(*fqdns: str, whiteboard: str = "cli test") -> str:
    recipes = "".join(f'<recipe whiteboard="on {fqdn}"><hostRequires><hostname value="{fqdn}"/></hostRequires>'
                      f'<task name="/cli/smoke"/></recipe>' for fqdn in fqdns)
    return f"<job><whiteboard>{whiteboard}</whiteboard><recipeSet>{recipes}</recipeSet></job>"


def job_json(fqdn: str, whiteboard: str = "cli json") -> str:
    return json.dumps({"whiteboard": whiteboard, "recipe_sets": [{"priority": "High", "recipes": [
        {"whiteboard": "json recipe", "host_requires": {"field": "hostname", "op": "=", "value": fqdn}}]}]})


@pytest.fixture
def automated(add_system):
    """Adds systems the scheduler may use (condition automated)."""
    return lambda fqdn: add_system(fqdn, condition="automated")


@pytest.fixture
def submit(cli, tmp_path):
    """Submits a job through `lablease job submit FILE --json` and returns the job."""

    def run(text: str, suffix: str = ".xml", user: str = "admin") -> dict:
        path = tmp_path / f"job{time.monotonic_ns()}{suffix}"
        path.write_text(text)
        return json.loads(cli.ok("job", "submit", str(path), "--json", user=user).out)

    return run


def recipes(job: dict) -> list[dict]:
    return [r for rs in job["recipe_sets"] for r in rs["recipes"]]


def block(text: str) -> dict[str, list[str]]:
    """The `label:  value` lines of a block, each label's values in order (`ruled out` and `busy` repeat)."""
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        if ":  " in line or line.endswith(":"):
            label, _, value = line.partition(":")
            found.setdefault(label.strip(), []).append(value.strip())
    return found


class Polls:
    """Stands in for the CLI's sleep between two polls: runs the next scripted action instead of waiting,
    and moves the CLI's clock on by the pause, so `--timeout` runs out without real time passing."""

    def __init__(self):
        self.actions: list = []
        self.pauses = 0
        self.now = 0.0

    def sleep(self, seconds: float) -> None:
        self.pauses += 1
        self.now += seconds
        if self.actions:
            self.actions.pop(0)()


@pytest.fixture
def polls(monkeypatch) -> Polls:
    polls = Polls()
    monkeypatch.setattr(client_jobs, "sleep", polls.sleep)
    monkeypatch.setattr(client_jobs, "monotonic", lambda: polls.now)
    return polls


def finish_recipe(server, recipe_id: int, result: str = "pass"):
    response = server.admin.patch(f"/recipes/{recipe_id}", json={"status": "completed", "result": result})
    assert response.status_code == 200, response.text


# --- submitting --------------------------------------------------------------------------------

def test_submit_an_xml_file_prints_the_job_and_its_recipes(cli, automated, tmp_path):
    automated("jx1.lab.test")
    path = tmp_path / "job.xml"
    path.write_text(job_xml("jx1.lab.test", whiteboard="xml job"))
    result = cli.ok("job", "submit", str(path))
    head, _, table = result.out.partition("\n\n")
    fields = block(head)
    assert fields["whiteboard"] == ["xml job"] and fields["status"] == ["running"] and int(fields["id"][0]) > 0
    lines = table.splitlines()
    assert lines[0].split() == ["SET", "PRIORITY", "RECIPE", "STATUS", "RESULT", "SYSTEM", "WHITEBOARD"]
    assert lines[1].split()[3:6] == ["running", "none", "jx1.lab.test"]
    assert lines[1].index("jx1.lab.test") == lines[0].index("SYSTEM")


def test_submit_json_a_file_without_extension_and_stdin(cli, automated, tmp_path, submit):
    automated("jj1.lab.test")
    job = submit(job_json("jj1.lab.test"), ".json")
    assert job["whiteboard"] == "cli json" and job["recipe_sets"][0]["priority"] == "High"
    assert [(r["status"], r["system"]) for r in recipes(job)] == [("running", "jj1.lab.test")]
    cli.ok("job", "cancel", str(job["id"]))
    bare = tmp_path / "jobfile"
    bare.write_text("\n  " + job_xml("jj1.lab.test", whiteboard="sniffed"))  # no extension: sniffed
    assert json.loads(cli.ok("job", "submit", str(bare), "--json").out)["whiteboard"] == "sniffed"
    from_stdin = cli.ok("job", "submit", "-", "--json", stdin=job_xml("jj1.lab.test", whiteboard="piped xml"))
    assert json.loads(from_stdin.out)["whiteboard"] == "piped xml"
    as_bytes = cli.ok("job", "submit", "-", "--xml", stdin=job_json("jj1.lab.test", "piped json").encode())
    assert ET.fromstring(as_bytes.out).findtext("whiteboard") == "piped json"


def test_submit_wait_returns_once_every_recipe_runs(cli, server, automated, submit, tmp_path, polls):
    automated("jw1.lab.test")
    holder = submit(job_xml("jw1.lab.test"))
    path = tmp_path / "second.xml"
    path.write_text(job_xml("jw1.lab.test", whiteboard="waits"))
    polls.actions = [lambda: finish_recipe(server, recipes(holder)[0]["id"])]  # while it waits, the system frees
    result = cli.ok("job", "submit", str(path), "--wait", "--timeout", "20", *FAST, "--json")
    job = json.loads(result.out)
    assert [(r["status"], r["system"]) for r in recipes(job)] == [("running", "jw1.lab.test")]
    assert polls.pauses == 1  # it found the job queued, waited, and returned at the next poll
    cli.ok("job", "cancel", str(job["id"]))


def test_submit_wait_times_out_with_9_and_says_why(cli, automated, submit, tmp_path, polls):
    automated("jt1.lab.test")
    holder = submit(job_xml("jt1.lab.test"))
    path = tmp_path / "late.xml"
    path.write_text(job_xml("jt1.lab.test"))
    result = cli("job", "submit", str(path), "--timeout", "0.3", *FAST)
    assert result.code == ExitStatus.TIMED_OUT == 9
    assert (polls.pauses, polls.now) == (6, 0.3)  # polled every 0.05 s until the 0.3 s were up
    assert block(result.out)["status"] == ["queued"]  # the job is shown: its id is needed to cancel it
    job_id = block(result.out)["id"][0]
    assert result.err.count("\n") == 1
    assert result.err.startswith(f"lablease: job {job_id}: not every recipe is running after 0.3s; recipe ")
    assert "is queued: " in result.err
    assert result.err.endswith("; 1 candidate(s) busy: jt1.lab.test until further notice\n")
    cli.ok("job", "cancel", job_id)
    cli.ok("job", "cancel", str(holder["id"]))


def test_submit_wait_exits_8_when_a_recipe_ends_first(cli, server, automated, submit, tmp_path, polls):
    automated("je1.lab.test")
    holder = submit(job_xml("je1.lab.test"))
    path = tmp_path / "doomed.xml"
    path.write_text(job_xml("je1.lab.test"))

    def cancel_the_waiting_one():
        [waiting] = [j for j in server.admin.get("/jobs", params={"status": "queued"}).json() if j["id"] > holder["id"]]
        assert server.admin.post(f"/jobs/{waiting['id']}/cancel").status_code == 200

    polls.actions = [cancel_the_waiting_one]
    result = cli("job", "submit", str(path), "--wait", "--timeout", "20", *FAST, "--json")
    assert polls.pauses == 1
    assert result.code == ExitStatus.ENDED == 8
    assert json.loads(result.out)["status"] == "cancelled"
    assert "cancelled (result none) before every recipe was running" in result.err
    cli.ok("job", "cancel", str(holder["id"]))


@pytest.mark.parametrize("text, suffix, code, reason", [
    ("<job><recipeSet><recipe><autopick><pool>x-no-such</pool></autopick></recipe></recipeSet></job>", ".xml",
     6, "no pool named x-no-such"),
    ("<job>\n<recipeSet>\n<recipe>\n<colour/></recipe></recipeSet></job>", ".xml",
     6, "job: line 4: <colour> is not allowed inside <recipe>"),
    ('{"recipe_sets": [{"recipes": [{"host_requires": {"field": "memory", "op": ">=", "value": "lots"}}]}]}',
     ".json", 6, "recipe_sets[0].recipes[0].host_requires"),
    ("{not json", ".json", 6, ""),
    ("<job><recipeSet><recipe/></recipeSet></job>", ".json", 6, ""),  # XML sent as JSON: the server refuses
])
def test_a_refused_job_exits_6_with_the_servers_reason(cli, tmp_path, text, suffix, code, reason):
    path = tmp_path / f"bad{suffix}"
    path.write_text(text)
    result = cli("job", "submit", str(path))
    assert (result.code, result.out) == (code, "")
    assert result.err.startswith("lablease: ") and result.err.count("\n") == 1 and reason in result.err


def test_an_unreadable_file_is_a_usage_error(cli, tmp_path):
    result = cli("job", "submit", str(tmp_path / "missing.xml"))
    assert result.code == 2 and result.err == f"lablease: cannot read {tmp_path / 'missing.xml'}: " \
                                              "No such file or directory\n"


# --- one job -----------------------------------------------------------------------------------

def test_status_as_table_json_and_xml(cli, server, automated, submit):
    automated("js1.lab.test")
    automated("js2.lab.test")
    holder = submit(job_xml("js2.lab.test"))  # keeps js2 busy, so the set below waits (it would hold js1)
    job = submit(job_xml("js1.lab.test", "js2.lab.test", whiteboard="two recipes"))
    # js2 made Manual: the set can never start (refused, had it been so at submit), so it holds nothing
    assert server.admin.patch("/systems/js2.lab.test", json={"condition": "manual"}).status_code == 200
    # a recipe set is placed all or nothing: js2 is never given, so both recipes wait though js1 is free
    shown = cli.ok("job", "status", str(job["id"]))
    assert block(shown.out)["status"] == ["queued"]
    rows = shown.out.partition("\n\n")[2].splitlines()
    assert [row.split()[2:5] for row in rows[1:]] == [[str(r["id"]), "queued", "none"] for r in recipes(job)]
    assert rows[1].endswith("on js1.lab.test") and rows[2].endswith("on js2.lab.test")
    as_json = json.loads(cli.ok("job", "status", str(job["id"]), "--json").out)
    assert as_json["id"] == job["id"] and len(recipes(as_json)) == 2
    root = ET.fromstring(cli.ok("--xml", "job", "status", str(job["id"])).out)
    assert root.tag == "job" and root.findtext("whiteboard") == "two recipes"
    assert [r.findtext("whiteboard") for r in root.findall("recipe_sets/recipe_set/recipes/recipe")] == \
        ["on js1.lab.test", "on js2.lab.test"]
    assert root.find("recipe_sets/recipe_set/recipes/recipe/system").get("null") == "true"
    cli.ok("job", "cancel", str(job["id"]))
    cli.ok("job", "cancel", str(holder["id"]))


def test_status_and_recipe_show_list_guests_with_what_a_harness_needs(cli, server, automated, submit):
    automated("jg1.lab.test")
    tree = {"name": "GuestOS-1", "family": "GuestOS1", "arch": "x86_64", "url": "http://mirror.lab.test/guestos/",
            "kernel": "vmlinuz", "initrd": "initrd.img"}
    assert server.admin.post("/distro-trees", json=tree).status_code == 201
    # a host that installs nothing runs at once, so its guest has its installation at once
    job = submit('<job><recipeSet><recipe><hostRequires><hostname value="jg1.lab.test"/></hostRequires>'
                 '<guestrecipe guestname="vm-a" guestargs="--ram=1024"><distroRequires>'
                 '<distro_name value="GuestOS-1"/></distroRequires><hostRequires/><task name="/t"/></guestrecipe>'
                 '</recipe></recipeSet></job>')
    host, guest = recipes(job)[0], recipes(job)[0]["guests"][0]
    shown = cli.ok("job", "status", str(job["id"])).out
    rows = shown.split("\n\n")[1].splitlines()
    assert [row.split()[2:4] for row in rows[1:]] == [[str(host["id"]), "running"], [str(guest["id"]), "waiting"]]
    details = block(shown.split("\n\n")[2])
    assert details["guestname"] == ["vm-a"] and details["guestargs"] == ["--ram=1024"]
    assert details["host recipe"] == [str(host["id"])] and details["mac"] == [guest["mac"]]
    assert details["kickstart"] == [guest["installation"]["kickstart_url"]]
    assert details["install_start"] == [guest["installation"]["callbacks"]["install_start"]]
    assert details["tree"] == ["http://mirror.lab.test/guestos/"]
    assert block(cli.ok("recipe", "show", str(guest["id"])).out)["guestname"] == ["vm-a"]
    assert block(cli.ok("recipe", "show", str(host["id"])).out)["guest recipe"] == [str(guest["id"])]
    assert cli.ok("job", "cancel", str(job["id"])).out == f"cancelled job {job['id']}: 2 of 2 recipe(s) cancelled\n"


def test_cancel_says_what_it_did(cli, automated, submit):
    automated("jc1.lab.test")
    job = submit(job_xml("jc1.lab.test"))
    assert cli.ok("job", "cancel", str(job["id"])).out == f"cancelled job {job['id']}: 1 of 1 recipe(s) cancelled\n"
    assert cli.ok("job", "cancel", str(job["id"])).out == f"job {job['id']} is already cancelled; nothing to cancel\n"
    assert json.loads(cli.ok("job", "cancel", str(job["id"]), "--json").out)["status"] == "cancelled"
    # the system is free again
    again = submit(job_xml("jc1.lab.test"))
    assert recipes(again)[0]["status"] == "running"
    cli.ok("job", "cancel", str(again["id"]))


def test_submit_prints_the_warnings_and_export_writes_a_job_that_resubmits(cli, automated, tmp_path):
    automated("jexp.lab.test")
    path = tmp_path / "exported.xml"
    path.write_text('<job id="77" retention_tag="scratch"><recipeSet><recipe><hostRequires>'
                    '<hostname value="jexp.lab.test"/></hostRequires><watchdog panic="ignore"/>'
                    '<task name="/cli/smoke" result="Pass"/></recipe></recipeSet></job>')
    out = cli.ok("job", "submit", str(path)).out
    job_id = block(out.partition("\n\n")[0])["id"][0]
    assert out.splitlines()[-4:] == [
        "warning: /job/@id: id='77' describes a run in another system (an exported job): ignored",
        "warning: /job/recipeSet[1]/recipe[1]/task[1]/@result: result='Pass' describes a run in another system "
        "(an exported job): ignored",
        "warning: /job/@retention_tag: kept with the job; lablease has no retention policies, results are kept as "
        "the site keeps them",
        "warning: /job/recipeSet[1]/recipe[1]/watchdog/@panic: kept; lablease does not watch consoles for panics "
        "(its watchdog is the recipe's runtime limit)"]
    exported = cli.ok("job", "export", job_id).out
    assert exported.startswith("<?xml") and 'retention_tag="scratch"' in exported and 'id="77"' not in exported
    cli.ok("job", "cancel", job_id)
    again = tmp_path / "again.xml"
    again.write_text(exported)
    resubmitted = cli.ok("job", "submit", str(again)).out
    assert [line for line in resubmitted.splitlines() if line.startswith("warning:")] == out.splitlines()[-2:]
    assert cli.ok("job", "export", block(resubmitted.partition("\n\n")[0])["id"][0]).out == exported


def test_other_peoples_jobs_are_not_found(cli, automated, submit):
    automated("jo1.lab.test")
    job = submit(job_xml("jo1.lab.test"))
    recipe_id = str(recipes(job)[0]["id"])
    for argv in (["job", "status", str(job["id"])], ["job", "cancel", str(job["id"])],
                 ["recipe", "show", recipe_id], ["recipe", "finish", recipe_id, "--abort"]):
        result = cli(*argv, user="bob")
        assert (result.code, result.out) == (ExitStatus.NOT_FOUND, ""), argv
    assert cli("job", "status", "999999").err == "lablease: no job 999999\n"
    cli.ok("job", "cancel", str(job["id"]))


def test_watch_prints_each_change_until_the_job_is_finished(cli, server, automated, submit, polls):
    automated("jwa1.lab.test")
    holder = submit(job_xml("jwa1.lab.test"))
    job = submit(job_xml("jwa1.lab.test", whiteboard="watched"))
    recipe_id = recipes(job)[0]["id"]
    polls.actions = [lambda: finish_recipe(server, recipes(holder)[0]["id"]),  # frees the system: the recipe starts
                     lambda: finish_recipe(server, recipe_id, "warn")]
    result = cli.ok("job", "watch", str(job["id"]), *FAST)
    assert polls.pauses == 2
    said = [line.split("  ", 1)[1] for line in result.lines]
    assert said == [f"recipe {recipe_id}  queued",
                    f"recipe {recipe_id}  queued -> running  on jwa1.lab.test",
                    f"recipe {recipe_id}  running -> completed  on jwa1.lab.test  result warn",
                    f"job {job['id']} completed: warn"]
    assert all(re.match(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC  ", line) for line in result.lines), result.lines
    # a finished job: its state and the end at once; --json prints only the finished job
    assert len(cli.ok("job", "watch", str(job["id"])).lines) == 2
    assert json.loads(cli.ok("job", "watch", str(job["id"]), "--json").out)["result"] == "warn"


def test_watch_stops_on_ctrl_c_with_130(server, automated, submit):
    automated("jint1.lab.test")
    submit(job_xml("jint1.lab.test"))
    job = submit(job_xml("jint1.lab.test"))
    script = Path(sys.executable).parent / "lablease"
    env = {**os.environ, "LABLEASE_URL": server.url, "LABLEASE_TOKEN": server.tokens["admin"]}
    # A child inherits an ignored SIGINT (a test run started in the background has one), and Python then
    # leaves Ctrl-C ignored: start it as a terminal would, with Ctrl-C handled.
    ignored = signal.signal(signal.SIGINT, signal.default_int_handler)
    # `with`: the process is waited for and its pipes closed even when the test fails (never left to a later test)
    try:
        process = subprocess.Popen([str(script), "job", "watch", str(job["id"]), "--interval", "0.1"], env=env,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    finally:
        signal.signal(signal.SIGINT, ignored)
    with process:
        try:
            first = process.stdout.readline()  # watching has begun
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=20)
        finally:
            if process.poll() is None:
                process.kill()
    assert first.rstrip().endswith(f"recipe {recipes(job)[0]['id']}  queued")
    assert (process.returncode, err) == (130, "lablease: interrupted\n")


def test_ctrl_c_while_waiting_names_the_job(cli, automated, submit, tmp_path, monkeypatch):
    automated("jint2.lab.test")
    holder = submit(job_xml("jint2.lab.test"))
    path = tmp_path / "job.xml"
    path.write_text(job_xml("jint2.lab.test"))

    def interrupted(seconds):
        raise KeyboardInterrupt

    monkeypatch.setattr(client_jobs, "sleep", interrupted)
    result = cli("job", "submit", str(path), "--wait")
    assert result.code == 130 and result.out == ""
    job_id = server_newest_job(cli)
    assert result.err == (f"lablease: interrupted; job {job_id} stays submitted (queued; "
                          f"`lablease job cancel {job_id}` cancels it)\n")
    cli.ok("job", "cancel", str(job_id))
    cli.ok("job", "cancel", str(holder["id"]))


def server_newest_job(cli) -> int:
    return json.loads(cli.ok("jobs", "--json").out)[0]["id"]


def test_jobs_lists_mine_unless_all_and_filters_status(cli, automated, submit):
    automated("jl1.lab.test")
    mine = submit(job_xml("jl1.lab.test", whiteboard="carol's"), user="carol")
    listed = cli.ok("jobs", user="carol")
    assert listed.lines[0].split() == ["ID", "OWNER", "STATUS", "RESULT", "RECIPES", "SYSTEMS", "SUBMITTED",
                                       "WHITEBOARD"]
    assert [line.split()[:6] for line in listed.lines[1:]] == [[str(mine["id"]), "carol", "running", "none", "1",
                                                                 "jl1.lab.test"]]
    assert mine["id"] not in [j["id"] for j in json.loads(cli.ok("jobs", "--json").out)]
    assert mine["id"] in [j["id"] for j in json.loads(cli.ok("jobs", "--all", "--json").out)]
    assert json.loads(cli.ok("jobs", "--status", "cancelled", "--json", user="carol").out) == []
    cli.ok("job", "cancel", str(mine["id"]), user="carol")
    cancelled = ET.fromstring(cli.ok("jobs", "--status", "cancelled", "--xml", user="carol").out)
    assert cancelled.tag == "jobs" and [j.findtext("id") for j in cancelled.findall("job")] == [str(mine["id"])]


# --- recipes -----------------------------------------------------------------------------------

def test_recipe_show_says_why_it_waits(cli, automated, submit):
    automated("jy1.lab.test")
    automated("jy2.lab.test")  # ruled out: not the host asked for
    holder = submit(job_xml("jy1.lab.test"))
    job = submit(job_xml("jy1.lab.test", whiteboard="why"))
    recipe_id = recipes(job)[0]["id"]
    shown = cli.ok("recipe", "show", str(recipe_id))
    fields = block(shown.out)
    assert fields["id"] == [str(recipe_id)] and fields["job"] == [str(job["id"])]
    assert fields["status"] == ["queued"] and fields["tasks"] == ["/cli/smoke"]
    assert fields["why"][0].endswith("1 candidate(s) busy: jy1.lab.test until further notice")
    assert fields["candidates"] == ["1"] and int(fields["systems"][0]) > 1
    assert fields["busy"] == ["jy1.lab.test until further notice"]
    assert fields["reason"] == ["busy"] and fields["action"] == ["Wait for jy1.lab.test: it runs on no other system."]
    ruled_out = fields["ruled out"]
    assert ruled_out and all(" system(s): " in line for line in ruled_out)
    assert "hostname = jy1.lab.test" in [line.partition(": ")[2] for line in ruled_out]
    assert sum(int(line.split()[0]) for line in ruled_out) == int(fields["systems"][0]) - 1
    why = json.loads(cli.ok("recipe", "show", str(recipe_id), "--json").out)["why"]
    assert why["busy"] == [{"system": "jy1.lab.test", "until": None}]
    root = ET.fromstring(cli.ok("recipe", "show", str(recipe_id), "--xml").out)
    assert root.tag == "recipe" and root.findtext("why/busy/candidate/system") == "jy1.lab.test"
    assert root.findtext("spec/tasks/task/name") == "/cli/smoke"
    # running: no why
    running = cli.ok("recipe", "show", str(recipes(holder)[0]["id"]))
    assert "why" not in block(running.out) and block(running.out)["system"] == ["jy1.lab.test"]
    cli.ok("job", "cancel", str(job["id"]))
    cli.ok("job", "cancel", str(holder["id"]))


def test_recipe_finish_with_a_result_or_abort(cli, automated, submit):
    automated("jf1.lab.test")
    automated("jf2.lab.test")
    job = submit(job_xml("jf1.lab.test"))
    other = submit(job_xml("jf2.lab.test"))
    first, second = recipes(job)[0]["id"], recipes(other)[0]["id"]
    assert cli.ok("recipe", "finish", str(first), "--result", "fail").out == f"recipe {first} completed: fail\n"
    assert json.loads(cli.ok("job", "status", str(job["id"]), "--json").out)["result"] == "fail"
    aborted = json.loads(cli.ok("recipe", "finish", str(second), "--abort", "--json").out)
    assert aborted["status"] == "aborted"
    again = cli("recipe", "finish", str(first), "--result", "pass")  # only a running recipe can complete
    assert again.code == ExitStatus.INVALID and again.err.startswith("lablease: status: only a running recipe")
    late = cli("recipe", "finish", str(second), "--abort")
    assert late.code == ExitStatus.CONFLICT and late.err == "lablease: the recipe is already aborted\n"
    assert cli("recipe", "show", "999999").code == ExitStatus.NOT_FOUND


# --- the queue and distro trees ------------------------------------------------------------------

def test_queue_lists_waiting_recipes_with_why(cli, automated, submit):
    automated("jq1.lab.test")
    holder = submit(job_xml("jq1.lab.test"))
    job = submit(job_xml("jq1.lab.test"))
    recipe_id = str(recipes(job)[0]["id"])
    result = cli.ok("queue")
    header = result.lines[0]
    assert header.split() == ["RECIPE", "JOB", "OWNER", "PRIORITY", "STATUS", "QUEUED", "#", "REASON", "WHY"]
    row = next(line for line in result.lines[1:] if line.split()[0] == recipe_id)
    assert row.split()[1:5] == [str(job["id"]), "admin", "Normal", "queued"]
    assert f" {format_when(datetime.fromisoformat(job['submitted_at']))} " in row  # QUEUED, as people read it
    assert row[header.index("WHY"):].endswith("; 1 candidate(s) busy: jq1.lab.test until further notice")
    assert row[header.index("REASON"):].split()[0] == "busy"
    entries = json.loads(cli.ok("queue", "--json").out)
    assert {"recipe": int(recipe_id), "job": job["id"]}.items() <= next(
        e for e in entries if e["recipe"] == int(recipe_id)).items()
    root = ET.fromstring(cli.ok("queue", "--xml").out)
    assert root.tag == "queue" and recipe_id in [e.findtext("recipe") for e in root.findall("queued-recipe")]
    cli.ok("job", "cancel", str(job["id"]))
    cli.ok("job", "cancel", str(holder["id"]))
    assert recipe_id not in [line.split()[0] for line in cli.ok("queue").lines[1:]]


def test_distros_lists_and_filters(cli, server):
    for arch in ("x86_64", "aarch64"):
        response = server.admin.post("/distro-trees", json={
            "name": "CliOS-9", "family": "CliOS9", "variant": "BaseOS", "arch": arch, "url": f"http://x/{arch}/",
            "kernel": "vmlinuz", "initrd": "initrd.img", "tags": ["RELEASED"]})
        assert response.status_code == 201, response.text
    result = cli.ok("distros", "--name", "CliOS-9", user="bob")
    assert result.lines[0].split() == ["ID", "NAME", "FAMILY", "VARIANT", "ARCH", "TAGS", "LABS"]
    assert sorted(line.split()[1:6] for line in result.lines[1:]) == [
        ["CliOS-9", "CliOS9", "BaseOS", "aarch64", "RELEASED"], ["CliOS-9", "CliOS9", "BaseOS", "x86_64", "RELEASED"]]
    only = json.loads(cli.ok("distros", "--family", "CliOS9", "--arch", "aarch64", "--json").out)
    assert [(d["name"], d["arch"]) for d in only] == [("CliOS-9", "aarch64")]
    root = ET.fromstring(cli.ok("distros", "--variant", "BaseOS", "--name", "CliOS-9", "--xml").out)
    assert root.tag == "distro-trees" and root.findtext("distro-tree/tags/tag") == "RELEASED"


@pytest.mark.parametrize("argv", [
    ["job"],
    ["job", "submit"],
    ["job", "submit", "x.xml", "--timeout", "soon"],
    ["job", "watch", "1", "--interval", "0"],
    ["job", "status", "one"],
    ["jobs", "--status", "sleeping"],
    ["recipe", "finish", "1"],
    ["recipe", "finish", "1", "--result", "maybe"],
    ["recipe", "finish", "1", "--result", "pass", "--abort"],
])
def test_job_usage_errors_exit_2(cli, argv):
    result = cli(*argv)
    assert (result.code, result.out) == (ExitStatus.USAGE, "")


def test_return_of_a_recipes_reservation_exits_5_naming_the_recipe_and_the_job(cli, automated, submit, server):
    automated("ret1.lab.test")
    job = submit(job_xml("ret1.lab.test"), user="bob")
    [recipe] = recipes(job)
    assert recipe["status"] == "running" and recipe["reservation"]
    result = cli("return", str(recipe["reservation"]), user="bob")
    assert result.code == ExitStatus.CONFLICT == 5 and result.out == "" and result.err.count("\n") == 1
    assert result.err.startswith(f"lablease: reservation {recipe['reservation']} is held by recipe {recipe['id']} "
                                 f"of job {job['id']}")
    assert f"lablease job cancel {job['id']}" in result.err
    assert server.admin.get(f"/recipes/{recipe['id']}").json()["status"] == "running"
    cli.ok("job", "cancel", str(job["id"]), user="bob")
    assert server.admin.get(f"/reservations/{recipe['reservation']}").json()["state"] == "returned"
