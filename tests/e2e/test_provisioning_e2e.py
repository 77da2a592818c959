"""Provisioning end to end: a real server and worker, simulated machines that netboot from what the
server wrote, fetch their kickstart and call back over HTTP. Nothing in the server is faked."""
import os
import re
import time
from pathlib import Path

import pytest
import requests

from tests.support.live import LiveServer

SECRET = "bmc-pw-9f8e7d"
TREE = {"name": "Fedora-40", "family": "Fedora40", "arch": "x86_64", "url": "http://mirror.lab.test/f40/os/",
        "kernel": "images/pxeboot/vmlinuz", "initrd": "images/pxeboot/initrd.img"}


@pytest.fixture
def server(tmp_path, database_url):
    live = LiveServer(tmp_path / "data", database_url, settings={
        "install_timeout": "60s", "command_retry_delay": "1s", "log_level": "debug"}).start()
    yield live
    live.stop()


def add_virtual(server, fqdn, mac, condition="manual"):
    power = {"driver": "virtual", "boot_delay": 0.2, "install_delay": 0.5, "password": SECRET}
    response = server.admin.post("/systems", json={"fqdn": fqdn, "arch": "x86_64", "condition": condition,
                                                    "power": power, "netboot": {"mac": mac}})
    assert response.status_code == 201, response.text


def wait_for(what, check, timeout=60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def usage_changes(api, fqdn):
    changes = api.get(f"/systems/{fqdn}/usage").json()["changes"]
    return [c["new"] for c in changes if c["field"] == "usage"]


def vm_pid(server, fqdn):
    pid_file = server.data_dir / "virtual" / fqdn / "pid"
    return int(pid_file.read_text().split()[0]) if pid_file.exists() else None


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]


def test_manual_provision_reaches_running_through_real_callbacks(server):
    add_virtual(server, "vm1.lab.test", "52:54:00:e2:e0:01")
    assert server.admin.post("/distro-trees", json=TREE).status_code == 201
    alice = server.add_user("alice")
    reservation = alice.post("/reservations", json={"system": "vm1.lab.test", "duration": "2h"}).json()
    response = alice.post("/systems/vm1.lab.test/provision", json={"distro_tree": "Fedora-40"})
    assert response.status_code == 202, response.text
    install = response.json()
    done = wait_for("the installation to run", lambda: (
        lambda i: i if i["status"] in ("running", "failed") else None)(
        alice.get(f"/installations/{install['id']}").json()))
    assert done["status"] == "running", done
    assert done["started_at"] <= done["installed_at"] <= done["finished_at"]
    assert usage_changes(alice, "vm1.lab.test")[-3:] == ["waiting", "installing", "running"]
    # the machine booted the config the server wrote, then the local disk it was switched to
    console = (server.data_dir / "virtual" / "vm1.lab.test" / "console.log").read_text()
    assert "install_start" in console and "postinstall_done" in console
    commands = alice.get("/systems/vm1.lab.test/commands").json()
    assert [c["action"] for c in reversed(commands)] == ["netboot_install", "reboot", "netboot_local"]
    assert all(c["status"] == "completed" for c in commands)
    pid = vm_pid(server, "vm1.lab.test")
    assert pid and alive(pid)

    # Returning the reservation clears netboot and powers the machine off (the default release action).
    assert alice.delete(f"/reservations/{reservation['id']}").status_code == 204
    wait_for("the machine to be powered off", lambda: not alive(pid))
    tftp = server.data_dir / "tftpboot"
    wait_for("netboot to be cleared", lambda: not (tftp / "ipxe" / "52-54-00-e2-e0-01").exists())
    # the machine dies before its power-off command is recorded as done: wait for the record
    wait_for("the power state to say off",
             lambda: server.admin.get("/systems/vm1.lab.test").json()["power_state"] == "off")
    assert server.admin.get("/systems/vm1.lab.test").json()["power_state"] == "off"

    # No credential or installation token reached any log line.
    token = re.search(r"token=([\w-]+)", install["kickstart_url"]).group(1)
    logs = server.read_log() + console
    assert SECRET not in logs and token not in logs
    for answer in (server.admin.get(p).text for p in ("/systems/vm1.lab.test", "/systems/vm1.lab.test/activity",
                                                       "/systems/vm1.lab.test/commands")):
        assert SECRET not in answer


def test_a_scheduled_recipe_is_installed_runs_and_frees_its_system(server):
    add_virtual(server, "vm2.lab.test", "52:54:00:e2:e0:02", condition="automated")
    server.admin.post("/distro-trees", json=TREE)
    bob = server.add_user("bob")
    job = bob.post("/jobs", json={"recipe_sets": [{"recipes": [{
        "distro_requires": {"field": "distro_name", "op": "=", "value": "Fedora-40"},
        "ks_meta": "packages=git", "runtime_limit": 3600}]}]})
    assert job.status_code == 201, job.text
    recipe = job.json()["recipe_sets"][0]["recipes"][0]
    assert recipe["status"] == "waiting" and recipe["system"] == "vm2.lab.test"
    seen = set()

    def running():
        status = bob.get(f"/recipes/{recipe['id']}").json()["status"]
        seen.add(status)
        return status in ("running", "aborted") and status

    assert wait_for("the recipe to run", running) == "running"
    assert usage_changes(bob, "vm2.lab.test")[-4:] == ["scheduled", "waiting", "installing", "running"]
    kickstart = bob.get(f"/installations/{bob.get('/systems/vm2.lab.test').json()['installation']['id']}").json()
    assert "git" in kickstart["kickstart"] and f"R:{recipe['id']}" in kickstart["kickstart"]
    assert bob.patch(f"/recipes/{recipe['id']}", json={"status": "completed", "result": "pass"}).status_code == 200
    wait_for("the system to be powered off", lambda: server.admin.get("/systems/vm2.lab.test").json()[
        "power_state"] == "off")
    assert server.admin.get("/systems/vm2.lab.test").json()["usage"] == "idle"


def test_a_failing_install_is_reported_and_a_forged_callback_refused(server):
    add_virtual(server, "vm3.lab.test", "52:54:00:e2:e0:03")
    server.admin.patch("/systems/vm3.lab.test", json={"power": {"driver": "virtual", "boot_delay": 0.1,
                                                               "install_delay": 0.2, "fail_install": True}})
    server.admin.post("/distro-trees", json=TREE)
    alice = server.add_user("alice")
    alice.post("/reservations", json={"system": "vm3.lab.test", "duration": "1h"})
    install = alice.post("/systems/vm3.lab.test/provision", json={"distro_tree": "Fedora-40"}).json()
    forged = re.sub(r"token=[\w-]+", "token=guessed", install["kickstart_url"]).replace("/kickstart",
                                                                                        "/install_done")
    assert requests.post(forged, timeout=10).status_code == 403
    failed = wait_for("the installation to fail", lambda: (
        lambda i: i if i["status"] in ("running", "failed") else None)(
        alice.get(f"/installations/{install['id']}").json()))
    assert failed["status"] == "failed" and "install_fail" in failed["error"]
    assert alice.get("/systems/vm3.lab.test").json()["usage"] == "idle"
    # the token of a failed installation no longer opens its kickstart
    assert requests.get(install["kickstart_url"], timeout=10).status_code == 403


def test_a_command_interrupted_by_a_crash_is_retried_after_the_restart(tmp_path, database_url):
    live = LiveServer(tmp_path / "data", database_url, settings={"command_timeout": "2s",
                                                                 "command_retry_delay": "1s"})
    scripts = live.data_dir / "power-scripts"
    scripts.mkdir(parents=True)
    calls = tmp_path / "calls"
    (scripts / "slow").write_text(f"#!/bin/sh\necho \"start $power_mode\" >> {calls}\nsleep 1.5\n"
                                  f"echo \"end $power_mode\" >> {calls}\n")
    (scripts / "slow").chmod(0o755)
    live.start()
    try:
        live.admin.post("/systems", json={"fqdn": "c.lab.test", "arch": "x86_64",
                                          "power": {"driver": "command", "script": "slow"}})
        command = live.admin.post("/systems/c.lab.test/power", json={"action": "on"}).json()
        wait_for("the command to start", lambda: calls.exists())
        live.kill9()  # the server and its worker die mid-command
        live.launch()
        done = wait_for("the command to finish after the restart", lambda: (
            lambda c: c if c["status"] in ("completed", "failed") else None)(
            live.admin.get(f"/commands/{command['id']}").json()), timeout=60)
        assert done["status"] == "completed" and done["attempts"] == 2
        assert calls.read_text().count("start on") == 2
    finally:
        live.stop()
