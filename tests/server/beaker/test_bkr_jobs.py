"""The real `bkr` job commands against a live lablease: job-submit, job-list, job-results, job-watch,
job-cancel, job-logs, watchdog-show/-extend and workflow-simple, each checked through /api/v1 afterwards.
Then mrack's Beaker provider (as tmt's beaker provisioning uses it) provisions a host and deletes it.

bkr's read commands (job-results, job-list, job-watch, job-logs, watchdog-show) never log in: this server
shows jobs to those who do not, as Beaker does (setting beaker_public_jobs). A job that installs nothing
starts on a free Automated system as it is submitted; the worker installs mrack's host on a simulated
machine. The test stands in for the harness, reporting results with PATCH /api/v1/recipes/{id} as one would.
"""
from __future__ import annotations

import itertools
import json
import re
import subprocess
import time
import xml.etree.ElementTree as ET
import xmlrpc.client
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tests.server.beaker.conftest import start_hub
from tests.server.beaker.test_hub import login, rpc
from tests.support.bkr import ROOT

_hosts = itertools.count(1)
MRACK_PYTHON = ROOT / ".venv" / "tools" / "mrack" / "bin" / "python"


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    if not MRACK_PYTHON.exists():
        pytest.fail(f"{MRACK_PYTHON} is missing: run `make mrack` (make test does)")
    hub = start_hub(tmp_path_factory, run_worker=True, settings={"beaker_public_jobs": True})
    try:
        yield hub
    finally:
        hub.server.stop()


def job_xml(fqdn: str, whiteboard: str = "bkr test", reservesys: bool = True) -> str:
    keep = '<reservesys duration="3600"/>' if reservesys else ""
    return (f'<job><whiteboard>{whiteboard}</whiteboard><recipeSet priority="Normal"><recipe whiteboard="r1">'
            f'<hostRequires force="{fqdn}"/>{keep}<task name="/distribution/check-install"/>'
            '<task name="/kernel/fs"/></recipe></recipeSet></job>')


@pytest.fixture
def system(hub):
    """A new free Automated system for one test's jobs."""
    return hub.add_system(f"jobs{next(_hosts)}.lab.test", condition="automated")


def submitted(output: str) -> list[int]:
    """The job ids of bkr job-submit's `Submitted: ['J:1', 'J:2']`."""
    return [int(n) for n in re.findall(r"J:(\d+)", output)]


def submit(hub, user: str, *xml: str, tmp_path=None) -> list[int]:
    paths = []
    for index, text in enumerate(xml):
        path = tmp_path / f"job{index}.xml"
        path.write_text(text)
        paths.append(str(path))
    return submitted(hub.bkr(user).ok("job-submit", *paths))


def recipe_of(hub, user: str, job_id: int) -> dict:
    job = hub.api(user).get(f"/jobs/{job_id}").json()
    return job["recipe_sets"][0]["recipes"][0]


def report(hub, user: str, recipe_id: int, **body) -> dict:
    """The harness's part: results for tasks and the recipe's end, through lablease's API."""
    response = hub.api(user).patch(f"/recipes/{recipe_id}", json=body)
    assert response.status_code == 200, response.text
    return response.json()


def results(hub, user: str, taskspec: str) -> ET.Element:
    return ET.fromstring(hub.bkr(user).ok("job-results", taskspec))


# --- job-submit ------------------------------------------------------------------------------------------

def test_job_submit_takes_files_and_stdin_and_dry_run_submits_nothing(hub, tmp_path):
    first, second = (hub.add_system(f"submit{n}.lab.test", condition="automated") for n in (1, 2))
    ids = submit(hub, "alice", job_xml(first, "from a file"), job_xml(second, "another file"), tmp_path=tmp_path)
    assert len(ids) == 2
    jobs = {job["id"]: job for job in hub.api("alice").get("/jobs").json()}
    assert [jobs[i]["whiteboard"] for i in ids] == ["from a file", "another file"]
    assert recipe_of(hub, "alice", ids[0])["system"] == first
    before = len(hub.api("alice").get("/jobs").json())
    third = hub.add_system("submit3.lab.test", condition="automated")
    hub.bkr("alice").ok("job-submit", "--dry-run", stdin=job_xml(third, "dry"))
    assert len(hub.api("alice").get("/jobs").json()) == before  # nothing was queued
    [from_stdin] = submitted(hub.bkr("alice").ok("job-submit", "--ignore-missing-tasks", stdin=job_xml(third, "stdin")))
    assert hub.api("alice").get(f"/jobs/{from_stdin}").json()["whiteboard"] == "stdin"


def test_job_submit_refuses_a_bad_job_in_one_line_and_keeps_nothing(hub, system):
    before = len(hub.api("alice").get("/jobs").json())
    result = hub.bkr("alice")("job-submit", stdin=job_xml(system).replace("<task ", "<tusk "))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    [line] = [line for line in result.stderr.splitlines() if line.startswith("Exception:")]
    assert "tusk" in line
    # bkr itself drops a DOCTYPE before sending; another client's jobs.upload meets the job XML hardening
    entity = '<!DOCTYPE job [<!ENTITY x "y">]>' + job_xml(system).replace("bkr test", "&x;")
    fault = rpc(login(hub), hub, "jobs.upload", entity, False)
    assert isinstance(fault, xmlrpc.client.Fault) and "DOCTYPE" in fault.faultString
    assert len(hub.api("alice").get("/jobs").json()) == before


# --- job-results, job-watch ---------------------------------------------------------------------------------

def test_job_results_follow_the_run_until_reserved_then_junit(hub, system, tmp_path):
    [job_id] = submit(hub, "alice", job_xml(system), tmp_path=tmp_path)
    recipe = recipe_of(hub, "alice", job_id)
    root = results(hub, "alice", f"J:{job_id}")
    assert (root.tag, root.get("id"), root.get("status"), root.get("owner")) == ("job", str(job_id), "Running",
                                                                                "alice")
    element = root.find("recipeSet/recipe")
    assert element.get("system") == system and element.get("job_id") == str(job_id)
    assert [(t.get("name"), t.get("status")) for t in element.findall("task")] == [
        ("/distribution/check-install", "Running"), ("/kernel/fs", "Waiting")]
    report(hub, "alice", recipe["id"], tasks=[{"name": "/distribution/check-install", "result": "pass"},
                                               {"name": "/kernel/fs/ext4", "result": "fail", "message": "bad"}],
           status="completed")
    element = results(hub, "alice", f"R:{recipe['id']}")
    assert (element.tag, element.get("status"), element.get("result")) == ("recipe", "Reserved", "Fail")
    assert hub.api("alice").get(f"/systems/{system}").json()["reservation"]["user"] == "alice"
    fs = element.findall("task")[1]
    assert (fs.get("status"), fs.get("result"), fs.find("results/result").get("path")) == (
        "Completed", "Fail", "/kernel/fs/ext4")
    task = ET.fromstring(hub.bkr("alice").ok("job-results", f"T:{fs.get('id')}"))
    assert (task.tag, task.get("name")) == ("task", "/kernel/fs")
    junit = ET.fromstring(hub.bkr("alice").ok("job-results", "--format", "junit-xml", f"J:{job_id}").strip())
    suite = junit.find("testsuite")
    assert (suite.get("hostname"), suite.get("tests"), suite.get("failures")) == (system, "4", "2")  # (main) and one per result, for each task
    clone = ET.fromstring(hub.bkr("alice").ok("job-clone", "--dryrun", "--xml", f"J:{job_id}").encode())
    recipe_element = clone.find("recipeSet/recipe")
    assert recipe_element.find("hostRequires").get("force") == system and recipe_element.get("status") is None


def test_job_watch_exits_with_the_outcome(hub, tmp_path):
    passing, failing = (hub.add_system(f"watch{n}.lab.test", condition="automated") for n in (1, 2))
    ids = submit(hub, "alice", job_xml(passing, reservesys=False), job_xml(failing, reservesys=False),
                 tmp_path=tmp_path)
    for job_id, result in zip(ids, ("pass", "fail")):
        report(hub, "alice", recipe_of(hub, "alice", job_id)["id"], status="completed", result=result)
    watched = hub.bkr("alice")("job-watch", f"J:{ids[0]}")
    assert watched.returncode == 0 and "Completed" in watched.stdout, watched
    watched = hub.bkr("alice")("job-watch", f"J:{ids[1]}")
    assert watched.returncode == 1 and "Completed" in watched.stdout, watched


# --- job-list -----------------------------------------------------------------------------------------------

def test_job_list_filters(hub, tmp_path):
    systems = [hub.add_system(f"list{n}.lab.test", condition="automated") for n in range(3)]
    mine = submit(hub, "bob", job_xml(systems[0], "list nightly"), job_xml(systems[1], "list weekly"),
                  tmp_path=tmp_path)
    [alices] = submit(hub, "alice", job_xml(systems[2], "list nightly"), tmp_path=tmp_path)
    report(hub, "bob", recipe_of(hub, "bob", mine[1])["id"], status="aborted")

    def listed(*args, user="bob"):
        return submitted(hub.bkr(user).ok("job-list", *args))

    assert listed("--mine", "--min-id", str(mine[0])) == list(reversed(mine))
    assert listed("--whiteboard", "list nightly", "--min-id", str(mine[0]), user="admin") == [alices, mine[0]]
    assert listed("--owner", "alice", "--min-id", str(mine[0]), user="admin") == [alices]
    assert listed("--owner", "alice", "--min-id", str(mine[0])) == [alices]  # read without a login
    assert listed("--mine", "--min-id", str(mine[0]), "--max-id", str(mine[0])) == [mine[0]]
    assert listed("--mine", "--finished", "--min-id", str(mine[0])) == [mine[1]]
    assert listed("--mine", "--unfinished", "--min-id", str(mine[0])) == [mine[0]]
    assert set(listed("--mine", "--format", "json", "--min-id", str(mine[0]))) == set(mine)


# --- job-cancel, job-logs -----------------------------------------------------------------------------------

def test_job_cancel_a_job_and_a_recipe_set_and_a_reserved_job_frees_its_system(hub, system, tmp_path):
    other = hub.add_system(f"cancel{next(_hosts)}.lab.test", condition="automated")
    whole, one_set = submit(hub, "alice", job_xml(system, reservesys=False), job_xml(other), tmp_path=tmp_path)
    assert hub.bkr("alice").ok("job-cancel", f"J:{whole}").strip() == f"Cancelled J:{whole}"
    assert hub.api("alice").get(f"/jobs/{whole}").json()["status"] == "cancelled"
    set_id = hub.api("alice").get(f"/jobs/{one_set}").json()["recipe_sets"][0]["id"]
    assert f"no job {one_set}" in hub.bkr("bob").fails("job-cancel", f"RS:{set_id}")  # not bob's
    assert hub.api("alice").get(f"/jobs/{one_set}").json()["status"] == "running"
    recipe_id = hub.api("alice").get(f"/jobs/{one_set}").json()["recipe_sets"][0]["recipes"][0]["id"]
    error = hub.bkr("alice").fails("job-cancel", f"T:{recipe_id * 10000 + 1}")
    assert "a T: taskspec cannot be used here; give J:id or RS:id" in error
    hub.bkr("alice").ok("job-cancel", f"RS:{set_id}")
    job = hub.api("alice").get(f"/jobs/{one_set}").json()
    assert job["recipe_sets"][0]["status"] == "cancelled"
    assert hub.api("alice").get(f"/systems/{other}").json()["reservation"] is None


def test_cancelling_a_reserved_job_returns_the_system_it_keeps(hub, system, tmp_path):
    [job_id] = submit(hub, "alice", job_xml(system), tmp_path=tmp_path)
    report(hub, "alice", recipe_of(hub, "alice", job_id)["id"], status="completed", result="pass")
    assert results(hub, "alice", f"J:{job_id}").get("status") == "Reserved"
    assert hub.bkr("alice").ok("job-logs", f"J:{job_id}") == ""  # lablease keeps no result logs
    hub.bkr("alice").ok("job-cancel", f"J:{job_id}")
    assert hub.api("alice").get(f"/systems/{system}").json()["reservation"] is None
    assert results(hub, "alice", f"J:{job_id}").get("status") == "Completed"


# --- watchdog-show, watchdog-extend -------------------------------------------------------------------------

def test_the_watchdog_is_the_reserved_recipes_reservation_end(hub, system, tmp_path):
    [job_id] = submit(hub, "alice", job_xml(system), tmp_path=tmp_path)
    recipe = recipe_of(hub, "alice", job_id)
    task = f"{recipe['id'] * 10000 + 1}"
    assert hub.bkr("alice").ok("watchdog-show", task).strip() == f"{task}: N/A"  # running, no runtime limit
    report(hub, "alice", recipe["id"], status="completed", result="pass")
    shown = int(hub.bkr("alice").ok("watchdog-show", task).split(": ")[1])
    assert 3500 < shown <= 3600  # reservesys duration="3600"
    hub.bkr("alice").ok("watchdog-extend", "--by", "7200", f"R:{recipe['id']}")
    end = hub.api("alice").get(f"/systems/{system}").json()["reservation"]["end"]
    left = datetime.fromisoformat(end.replace("Z", "+00:00")) - datetime.now(timezone.utc)
    assert 7000 < left.total_seconds() <= 7200
    hub.bkr("alice").ok("watchdog-extend", "--by", "600", system)  # by the system's name
    shown = int(hub.bkr("alice").ok("watchdog-show", task).split(": ")[1])
    assert 500 < shown <= 600
    assert f"no job {job_id}" in hub.bkr("bob").fails("watchdog-extend", f"R:{recipe['id']}")  # not bob's


# --- workflow-simple ----------------------------------------------------------------------------------------

def test_workflow_simple_dry_run_and_for_real(hub):
    tree = {"name": "Flow-9", "family": "Flow9", "arch": "x86_64", "variant": "Server",
            "url": "http://mirror.lab.test/flow/9/", "kernel": "vmlinuz", "initrd": "initrd.img"}
    assert hub.api("admin").post("/distro-trees", json=tree).status_code == 201
    system = hub.add_system("flow.lab.test", condition="automated")
    before = len(hub.api("alice").get("/jobs").json())
    args = ("workflow-simple", "--distro", "Flow-9", "--task", "/distribution/check-install",
            "--task", "/kernel/fs", "--machine", system, "--whiteboard", "flow")
    out = hub.bkr("alice").ok(*args, "--dryrun", "--debug")
    assert 'value="Flow-9"' in out and 'name="/kernel/fs"' in out  # the job it would submit
    assert len(hub.api("alice").get("/jobs").json()) == before
    [job_id] = submitted(hub.bkr("alice").ok(*args))
    job = hub.api("alice").get(f"/jobs/{job_id}").json()
    [recipe] = job["recipe_sets"][0]["recipes"]
    assert (job["whiteboard"], recipe["system"]) == ("flow", system)
    spec = hub.api("alice").get(f"/recipes/{recipe['id']}").json()["spec"]
    assert [t["name"] for t in spec["tasks"]] == ["/distribution/check-install", "/kernel/fs"]
    hub.bkr("alice").ok("job-cancel", f"J:{job_id}")
    # distros.get_osmajor refuses an unknown distro; bkr turns that into its own message
    error = hub.bkr("alice").fails("workflow-simple", "--distro", "Nope-1", "--arch", "x86_64", "--task", "/a")
    assert error == "No tasks match the specified option(s)\n"


# --- mrack ----------------------------------------------------------------------------------------------------

DRIVER = Path(__file__).with_name("mrack_driver.py")
PUBKEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMrackTestKeyOnlyForThisTest0000000000000 ci@mrack"
TREE = {"name": "MrackOS-1", "family": "MrackOS1", "variant": "Server", "arch": "x86_64",
        "url": "http://mirror.lab.test/mrackos/1/", "kernel": "images/vmlinuz", "initrd": "images/initrd.img"}


def mrack(hub, *args: str) -> subprocess.Popen:
    env = {**hub.bkr("alice").env, "BEAKER_CONF": str(hub.bkr("alice").config)}
    return subprocess.Popen([str(MRACK_PYTHON), str(DRIVER), *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=hub.directory)  # mrack writes mrack.log there


def running_recipe(hub, job_id: int, timeout: float = 60) -> dict:
    """The job's recipe once the worker has installed its system (waiting, installing, then running)."""
    deadline = time.monotonic() + timeout
    while True:
        recipe = hub.api("alice").get(f"/jobs/{job_id}").json()["recipe_sets"][0]["recipes"][0]
        if recipe["status"] == "running" or time.monotonic() > deadline:
            return recipe
        time.sleep(0.2)


def test_mrack_provisions_a_host_until_reserved_and_deletes_it(hub):
    assert hub.api("admin").post("/distro-trees", json=TREE).status_code == 201
    hub.add_system("mrack1.lab.test", condition="automated", power={
        "driver": "virtual", "boot_delay": 0.1, "install_delay": 0.2}, netboot={"mac": "52:54:00:4d:00:01"})
    up = mrack(hub, "up", "mrack1", "MrackOS-1", PUBKEY, "mrack1.lab.test")
    try:
        line = up.stdout.readline()
        assert line, up.stderr.read()  # mrack said why it submitted nothing
        job_id = int(json.loads(line)["job"].split(":")[1])
        recipe = running_recipe(hub, job_id)
        assert (recipe["status"], recipe["system"]) == ("running", "mrack1.lab.test"), recipe
        spec = hub.api("alice").get(f"/recipes/{recipe['id']}").json()["spec"]
        assert spec["ks_meta"] == "harness='restraint-rhts beakerlib-redhat'"
        assert PUBKEY in spec["ks_appends"][0]
        # the harness's part: the task passed, the recipe is done; reservesys keeps the system: Reserved
        response = hub.api("alice").patch(f"/recipes/{recipe['id']}", json={
            "tasks": [{"name": "/distribution/dummy", "result": "pass"}], "status": "completed"})
        assert response.status_code == 200, response.text
        out, err = up.communicate(timeout=60)
    finally:
        up.kill()
        up.communicate()
    assert up.returncode == 0, err
    host = json.loads(out.splitlines()[-1])
    assert (host["id"], host["name"], host["status"], host["fault"]) == (f"J:{job_id}", "mrack1", "Reserved", None)
    assert hub.api("alice").get("/systems/mrack1.lab.test").json()["reservation"]["user"] == "alice"

    destroy = mrack(hub, "destroy", f"J:{job_id}", "mrack1")
    out, err = destroy.communicate(timeout=60)
    assert destroy.returncode == 0 and json.loads(out) == {"deleted": True}, err
    assert hub.api("alice").get("/systems/mrack1.lab.test").json()["reservation"] is None
    assert hub.api("alice").get(f"/jobs/{job_id}").json()["recipe_sets"][0]["recipes"][0]["status"] == "completed"
