"""mrack's Beaker provider (as tmt's beaker provisioning uses it) provisions a host from a real lablease and
deletes it: jobs.upload with mrack's job (its harness ks_meta and a ks_append carrying an SSH key),
taskactions.to_xml until the recipe is Reserved, taskactions.stop. The server's worker installs the host on
a simulated machine; the test stands in for the harness (restraint), reporting the task's result as it would.
"""
from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from tests.server.beaker.conftest import start_hub
from tests.support.bkr import ROOT

MRACK_PYTHON = ROOT / ".venv" / "tools" / "mrack" / "bin" / "python"
DRIVER = Path(__file__).with_name("mrack_driver.py")
PUBKEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMrackTestKeyOnlyForThisTest0000000000000 ci@mrack"
TREE = {"name": "MrackOS-1", "family": "MrackOS1", "variant": "Server", "arch": "x86_64",
        "url": "http://mirror.lab.test/mrackos/1/", "kernel": "images/vmlinuz", "initrd": "images/initrd.img"}


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    if not MRACK_PYTHON.exists():
        pytest.fail(f"{MRACK_PYTHON} is missing: run `make mrack` (make test does)")
    hub = start_hub(tmp_path_factory, run_worker=True)
    try:
        yield hub
    finally:
        hub.server.stop()


def mrack(hub, *args: str) -> subprocess.Popen:
    env = {**hub.bkr("alice").env, "BEAKER_CONF": str(hub.bkr("alice").config)}
    return subprocess.Popen([str(MRACK_PYTHON), str(DRIVER), *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)


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
    up = mrack(hub, "up", "mrack1", "MrackOS-1", PUBKEY)
    job_id = int(json.loads(up.stdout.readline())["job"].split(":")[1])
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
    assert up.returncode == 0, err
    host = json.loads(out.splitlines()[-1])
    assert (host["id"], host["name"], host["status"], host["fault"]) == (f"J:{job_id}", "mrack1", "Reserved", None)
    assert hub.api("alice").get("/systems/mrack1.lab.test").json()["reservation"]["user"] == "alice"

    destroy = mrack(hub, "destroy", f"J:{job_id}", "mrack1")
    out, err = destroy.communicate(timeout=60)
    assert destroy.returncode == 0 and json.loads(out) == {"deleted": True}, err
    assert hub.api("alice").get("/systems/mrack1.lab.test").json()["reservation"] is None
    assert hub.api("alice").get(f"/jobs/{job_id}").json()["recipe_sets"][0]["recipes"][0]["status"] == "completed"
