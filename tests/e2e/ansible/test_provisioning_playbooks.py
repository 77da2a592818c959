"""distro_tree, provision, power and the lease role's lease_distro, end to end.

One real `lablease-server serve` for the whole module, with simulated machines (the `virtual` power driver):
the worker starts a machine process that netboots from the configuration the server wrote, fetches its
kickstart and calls the installer callbacks over HTTP, so an installation reaches `running` in about two
seconds. The tests use disjoint systems, so they do not disturb each other; every claim is checked over the
API, as a user would.
"""
from __future__ import annotations

import json
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.e2e.ansible.test_playbooks import ansible_env, playbook, run
from tests.support.live import LiveServer

TREE = {"name": "Fedora-40", "family": "Fedora40", "arch": "x86_64", "url": "http://mirror.lab.test/f40/os/",
        "kernel": "images/pxeboot/vmlinuz", "initrd": "images/pxeboot/initrd.img"}
# fqdn -> (MAC, condition, extra power settings)
MACHINES = {
    "p1.lab.test": ("52:54:00:e3:00:01", "manual", {}),  # provision
    "p2.lab.test": ("52:54:00:e3:00:02", "manual", {"fail_install": True}),  # an install that fails
    "p3.lab.test": ("52:54:00:e3:00:03", "manual", {}),  # power
    "p4.lab.test": ("52:54:00:e3:00:04", "manual", {}),  # the lease role with lease_system
    "p5.lab.test": ("52:54:00:e3:00:05", "manual", {"install_delay": 11}),  # outlasts a 10 s heartbeat
    "a1.lab.test": ("52:54:00:e3:00:06", "automated", {}),  # the lease role with lease_requires
}
FAST = {"lablease.lab.provision": {"poll_interval": 1}, "lablease.lab.power": {"poll_interval": 1},
        "lablease.lab.job": {"wait_sleep": 1}}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """Users alice and bob, the tree Fedora-40 x86_64 and the simulated machines of MACHINES."""
    live = LiveServer(tmp_path_factory.mktemp("server") / "data", workers=1, threads=4,
                      settings={"install_timeout": "60s", "command_retry_delay": "1s"}).start()
    try:
        live.alice, live.bob = live.add_users("alice", "bob")
        for fqdn, (mac, condition, power) in MACHINES.items():
            answer = live.admin.post("/systems", json={
                "fqdn": fqdn, "arch": "x86_64", "condition": condition, "netboot": {"mac": mac},
                "power": {"driver": "virtual", "boot_delay": 0.2, "install_delay": 0.5, **power}})
            assert answer.status_code == 201, answer.text
        answer = live.admin.post("/distro-trees", json=TREE)
        assert answer.status_code == 201, answer.text
        deadline = time.monotonic() + 20
        while live.admin.get("/systems").status_code != 200 or live.admin.get("/distro-trees").status_code != 200:
            assert time.monotonic() < deadline, "the server kept answering errors after start; see its log"
        yield live
    finally:
        live.stop()


def recorded(env, path, *options):
    """(the ansible-playbook process, [(task name, status, result)]) - results as callbacks/record.py wrote them."""
    record = Path(str(path) + f".{time.monotonic_ns()}.jsonl")
    env = dict(env, ANSIBLE_CALLBACK_PLUGINS=str(Path(__file__).parent / "callbacks"),
               ANSIBLE_CALLBACKS_ENABLED="record", LABLEASE_TEST_RECORD=str(record))
    proc = run(env, "ansible-playbook", str(path), *options)
    if not record.exists():
        raise AssertionError(f"ansible-playbook recorded nothing ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    entries = [json.loads(line) for line in record.read_text().splitlines()]
    return proc, [(e["task"], e["status"], e["result"]) for e in entries if e["host"] == "localhost"]


def outcomes(env, path, *options):
    """Each task's result (with failed), in order, for plays without loops or skipped tasks."""
    _proc, entries = recorded(env, path, *options)
    return [dict(result, failed=status == "failed") for _task, status, result in entries]


def changed(entries):
    return [e["changed"] for e in entries]


def play(tmp_path, name, tasks, **extra):
    return playbook(tmp_path, tasks, name, module_defaults=FAST, **extra)


def when(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


# --- distro_tree ----------------------------------------------------------------------------------

STREAM = {"name": "CentOS-Stream-10", "arch": "x86_64", "variant": "BaseOS", "family": "CentOSStream10",
          "tree_url": "http://mirror.lab.test/c10s/BaseOS/x86_64/os/", "kernel": "images/pxeboot/vmlinuz",
          "initrd": "images/pxeboot/initrd.img", "tags": ["RELEASED", "STABLE"]}


def streams(server):
    return [t for t in server.admin.get("/distro-trees").json() if t["name"] == STREAM["name"]]


def test_distro_tree(server, tmp_path):
    admin = ansible_env(server, user="admin")
    task = {"name": "tree", "lablease.lab.distro_tree": STREAM}

    # check mode with --diff: would add it, shows it, writes nothing
    add = play(tmp_path, "add.yml", [task])
    proc, [(_, status, checked)] = recorded(admin, add, "--check", "--diff")
    assert status == "ok" and checked["changed"] and checked["distro_tree"]["id"] is None
    assert '+    "family": "CentOSStream10"' in proc.stdout and "changed: [localhost]" in proc.stdout
    assert streams(server) == []

    # added; the same again and with the tags in another order: not changed
    reordered = dict(STREAM, tags=["STABLE", "RELEASED"])
    three = play(tmp_path, "three.yml", [task, task, {"name": "reordered", "lablease.lab.distro_tree": reordered}])
    made, again, other_order = outcomes(admin, three)
    assert changed([made, again, other_order]) == [True, False, False] and not other_order["failed"]
    [tree] = streams(server)
    assert tree["id"] == made["distro_tree"]["id"] == again["distro_tree"]["id"]
    assert (tree["variant"], tree["family"], tree["url"], tree["kernel"]) == (
        "BaseOS", "CentOSStream10", STREAM["tree_url"], STREAM["kernel"])
    assert sorted(tree["tags"]) == ["RELEASED", "STABLE"] and tree["kernel_options"] is None

    # kernel_options: changed, and only that field (the tags and the rest are left alone); --diff shows it
    options = play(tmp_path, "options.yml", [{"name": "options", "lablease.lab.distro_tree": {
        "name": STREAM["name"], "arch": "x86_64", "variant": "BaseOS", "kernel_options": "inst.text"}}])
    proc, [(_, _, patched)] = recorded(admin, options, "--diff")
    assert patched["changed"]
    assert '-    "kernel_options": null,' in proc.stdout and '+    "kernel_options": "inst.text",' in proc.stdout
    [after] = streams(server)
    assert after["kernel_options"] == "inst.text"
    assert {k: v for k, v in after.items() if k != "kernel_options"} == {
        k: v for k, v in tree.items() if k != "kernel_options"}
    [same] = outcomes(admin, options)
    assert same["changed"] is False and streams(server) == [after]

    # absent: check mode keeps it; then removed; then nothing to do
    absent = {"name": "gone", "lablease.lab.distro_tree": {"name": STREAM["name"], "arch": "x86_64",
                                                            "variant": "BaseOS", "state": "absent"}}
    [would] = outcomes(admin, play(tmp_path, "absent-check.yml", [absent]), "--check")
    assert would["changed"] and streams(server) == [after]
    removed, nothing = outcomes(admin, play(tmp_path, "absent.yml", [absent, absent]))
    assert changed([removed, nothing]) == [True, False] and removed["distro_tree"] is None
    assert streams(server) == []
    assert server.admin.get(f"/distro-trees/{after['id']}").status_code == 404

    # not an administrator: every change fails, saying so; nothing is written
    fedora = server.admin.get("/distro-trees", params={"name": "Fedora-40"}).json()
    refused = play(tmp_path, "refused.yml", [
        dict(task, ignore_errors=True),
        {"name": "change", "lablease.lab.distro_tree": {"name": "Fedora-40", "arch": "x86_64", "tags": ["X"]},
         "ignore_errors": True},
        {"name": "remove", "lablease.lab.distro_tree": {"name": "Fedora-40", "arch": "x86_64", "state": "absent"},
         "ignore_errors": True}])
    add_refused, change_refused, remove_refused = outcomes(ansible_env(server, user="alice"), refused)
    assert add_refused["failed"] and add_refused["msg"] == "not allowed: only administrators may register distro trees"
    assert change_refused["failed"] and change_refused["msg"] == (
        "not allowed: only administrators may change distro trees")
    assert remove_refused["failed"] and remove_refused["msg"] == (
        "not allowed: only administrators may remove distro trees")
    assert streams(server) == [] and server.admin.get("/distro-trees", params={"name": "Fedora-40"}).json() == fedora


# --- provision ------------------------------------------------------------------------------------

def installations(server, fqdn):
    """The system's installations, oldest first."""
    return list(reversed(server.admin.get(f"/systems/{fqdn}/installations").json()))


def provision_task(name="provision", **args):
    return {"name": name, "lablease.lab.provision": {"system": "p1.lab.test", "distro": "Fedora-40",
                                                     "wait_timeout": 60, **args}}


def test_provision(server, tmp_path):
    alice = ansible_env(server, user="alice")
    held = server.alice.post("/reservations", json={"system": "p1.lab.test", "duration": "2h"}).json()

    # check mode: would install, installs nothing
    proc, [(_, _, checked)] = recorded(alice, play(tmp_path, "check.yml", [provision_task()]), "--check", "--diff")
    assert checked["changed"] and checked["installation"]["id"] is None
    assert checked["installation"]["reservation"] == held["id"] and '+    "distro": "Fedora-40"' in proc.stdout
    assert installations(server, "p1.lab.test") == []
    assert server.admin.get("/systems/p1.lab.test/commands").json() == []

    # installs and waits until the installed system has booted; the same task again: not changed
    twice = play(tmp_path, "twice.yml", [provision_task(ks_meta="harness=restraint"),
                                         provision_task("again", ks_meta=" harness=restraint ")])
    first, again = outcomes(alice, twice)
    assert changed([first, again]) == [True, False] and not again["failed"]
    assert first["installation"]["status"] == again["installation"]["status"] == "running"
    [made] = installations(server, "p1.lab.test")
    assert made["id"] == first["installation"]["id"] == again["installation"]["id"]
    assert made["status"] == "running" and made["reservation"] == held["id"] and made["user"] == "alice"
    assert made["ks_meta"] == "harness=restraint" and made["finished_at"]
    system = server.admin.get("/systems/p1.lab.test").json()
    assert system["usage"] == "running" and system["installation"] == {"id": made["id"], "status": "running"}
    # the server shows alice the rendered kickstart (it can carry passwords) and gave the task its URL with the
    # installation's token; the task's result, which lands in logs, carries neither
    assert "%packages" in server.alice.get(f"/installations/{made['id']}").json()["kickstart"]
    assert "kickstart" not in json.dumps([first, again]) and "token" not in json.dumps([first, again])

    # check mode with force: would install, installs nothing
    [would] = outcomes(alice, play(tmp_path, "force-check.yml", [provision_task(ks_meta="harness=restraint",
                                                                                force=True)]), "--check")
    assert would["changed"] and len(installations(server, "p1.lab.test")) == 1

    # force installs again; another ks_meta installs again
    again = play(tmp_path, "again.yml", [provision_task(ks_meta="harness=restraint", force=True),
                                         provision_task("other", ks_meta="harness=beah")])
    forced, other = outcomes(alice, again)
    assert changed([forced, other]) == [True, True]
    first_id, forced_id, other_id = [i["id"] for i in installations(server, "p1.lab.test")]
    assert (first_id, forced_id, other_id) == (made["id"], forced["installation"]["id"], other["installation"]["id"])
    shown = {i["id"]: i for i in installations(server, "p1.lab.test")}
    assert shown[forced_id]["ks_meta"] == "harness=restraint" and shown[other_id]["ks_meta"] == "harness=beah"
    # each new installation replaced the one before: only the last one is what the system runs
    assert [shown[i]["status"] for i in (first_id, forced_id, other_id)] == ["completed", "completed", "running"]
    assert server.admin.get("/systems/p1.lab.test").json()["installation"] == {"id": other_id, "status": "running"}

    # not the holder: a clear failure, in check mode too, whether or not the request matches alice's
    bob = ansible_env(server, user="bob")
    steal = play(tmp_path, "steal.yml", [dict(provision_task(ks_meta="harness=beah"), ignore_errors=True),
                                         dict(provision_task("other", ks_meta="x=1"), ignore_errors=True)])
    for options in (("--check",), ()):
        matching, different = outcomes(bob, steal, *options)
        assert matching["failed"] and different["failed"], (options, matching, different)
        for failed in (matching, different):
            assert failed["msg"] == ("not allowed: only the current holder of p1.lab.test may provision it; "
                                     "reserve it first"), (options, failed["msg"])
    assert len(installations(server, "p1.lab.test")) == 3


def test_a_failing_install_fails_the_task(server, tmp_path):
    server.alice.post("/reservations", json={"system": "p2.lab.test", "duration": "1h"}).raise_for_status()
    [failed] = outcomes(ansible_env(server, user="alice"), play(tmp_path, "fail.yml", [
        provision_task(system="p2.lab.test")]))
    [installation] = installations(server, "p2.lab.test")
    assert installation["status"] == "failed" and "install_fail" in installation["error"]
    assert failed["failed"] and failed["changed"] and failed["installation"]["id"] == installation["id"]
    assert failed["msg"] == "p2.lab.test: installation %d of Fedora-40 x86_64 failed: %s" % (
        installation["id"], installation["error"])
    assert server.admin.get("/systems/p2.lab.test").json()["usage"] == "idle"


# --- power ----------------------------------------------------------------------------------------

def commands(server, fqdn):
    return list(reversed(server.admin.get(f"/systems/{fqdn}/commands").json()))


def power_task(state, name=None):
    return {"name": name or state, "lablease.lab.power": {"system": "p3.lab.test", "state": state, "wait_timeout": 60}}


def test_power(server, tmp_path):
    alice = ansible_env(server, user="alice")
    server.alice.post("/reservations", json={"system": "p3.lab.test", "duration": "1h"}).raise_for_status()
    both = play(tmp_path, "power-check.yml", [power_task("off"), power_task("reboot")])

    # check mode sends nothing
    off, reboot = outcomes(alice, both, "--check")
    assert changed([off, reboot]) == [True, True] and off["command"] is None and reboot["command"] is None
    assert off["power_state"] == "off" and commands(server, "p3.lab.test") == []

    # off, off again (not changed), reboot twice (changed both)
    steps = play(tmp_path, "power.yml", [power_task("off"), power_task("off", "off again"),
                                         power_task("reboot"), power_task("reboot", "reboot again")])
    results = outcomes(alice, steps)
    assert changed(results) == [True, False, True, True] and not any(r["failed"] for r in results)
    assert results[1]["command"] is None and results[1]["power_state"] == "off"
    assert [r["power_state"] for r in results] == ["off", "off", "on", "on"]
    sent = commands(server, "p3.lab.test")
    assert [(c["action"], c["status"], c["user"]) for c in sent] == [
        ("off", "completed", "alice"), ("reboot", "completed", "alice"), ("reboot", "completed", "alice")]
    assert [c["id"] for c in sent] == [results[i]["command"]["id"] for i in (0, 2, 3)]
    assert server.admin.get("/systems/p3.lab.test").json()["power_state"] == "on"

    # check mode again, now that it is on: off would change, nothing is sent
    off, reboot = outcomes(alice, both, "--check")
    assert changed([off, reboot]) == [True, True] and len(commands(server, "p3.lab.test")) == 3


# --- the lease role -------------------------------------------------------------------------------

def lease_play(tmp_path, name, **role_vars):
    tasks = tmp_path / f"{name}-tasks.yml"
    tasks.write_text("- name: Work on the system\n  ansible.builtin.debug:\n"
                     "    msg: \"working on {{ lease_host }}: {{ lease_installation.installation.status"
                     " | default('no installation') }}\"\n")
    return play(tmp_path, name, [{"name": "lease", "ansible.builtin.include_role": {"name": "lablease.lab.lease"},
                                  "vars": {"lease_duration": "1h", "lease_wait_timeout": 60, "lease_distro": "Fedora-40",
                                           "lease_provision_timeout": 60, "lease_tasks": str(tasks), **role_vars}}])


def work(entries):
    [message] = [result["msg"] for task, status, result in entries if task == "Work on the system" and status == "ok"]
    return message


def test_lease_role_with_a_system_installs_it(server, tmp_path):
    proc, entries = recorded(ansible_env(server, user="alice"), lease_play(
        tmp_path, "lease-system.yml", lease_system="p4.lab.test", lease_ks_meta="harness=restraint"))
    assert proc.returncode == 0, proc.stdout
    assert work(entries) == "working on p4.lab.test: running"
    [installation] = installations(server, "p4.lab.test")
    # the system ran it while leased; returning the reservation completed it
    assert installation["status"] == "completed" and installation["ks_meta"] == "harness=restraint"
    reservation = server.admin.get(f"/reservations/{installation['reservation']}").json()
    assert reservation["user"] == "alice" and reservation["state"] == "returned"
    assert server.admin.get("/reservations", params={"system": "p4.lab.test", "active": "true"}).json() == []


def usage_changes(server, fqdn):
    return [c["new"] for c in server.admin.get(f"/systems/{fqdn}/usage").json()["changes"] if c["field"] == "usage"]


def test_lease_role_by_host_requirements_installs_the_recipe(server, tmp_path):
    proc, entries = recorded(ansible_env(server, user="bob"), lease_play(
        tmp_path, "lease-requires.yml", lease_requires={"field": "hostname", "op": "=", "value": "a1.lab.test"}))
    assert proc.returncode == 0, proc.stdout
    assert work(entries) == "working on a1.lab.test: no installation"
    [job] = server.bob.get("/jobs").json()
    [recipe] = job["recipe_sets"][0]["recipes"]
    assert recipe["system"] == "a1.lab.test" and recipe["status"] == "completed" and recipe["result"] == "pass"
    [installation] = installations(server, "a1.lab.test")
    assert installation["recipe"] == recipe["id"] and installation["status"] == "completed"  # the recipe finished
    assert installation["distro_tree"]["name"] == "Fedora-40"
    # the recipe went through installing (the installer's callbacks) to running only once the system had booted
    assert usage_changes(server, "a1.lab.test")[:4] == ["scheduled", "waiting", "installing", "running"]
    assert installation["started_at"] <= installation["finished_at"] <= recipe["started_at"]
    shown = server.bob.get(f"/recipes/{recipe['id']}").json()
    assert shown["reservation"] and server.admin.get(f"/reservations/{shown['reservation']}").json()["state"] != "active"
    assert server.admin.get("/reservations", params={"system": "a1.lab.test", "active": "true"}).json() == []


# --- provision keeps a heartbeat reservation alive ------------------------------------------------

def test_provision_sends_heartbeats_while_it_waits(server, tmp_path):
    # p5's installation takes 11 s: longer than the reservation's 10 s heartbeat (the server's minimum)
    steps = play(tmp_path, "heartbeat.yml", [
        {"name": "reserve", "lablease.lab.reservation": {"system": "p5.lab.test", "duration": "1h", "heartbeat": "10s"}},
        provision_task(system="p5.lab.test", poll_interval=5)])
    reserved, installed = outcomes(ansible_env(server, user="alice"), steps)
    assert not installed["failed"], installed["msg"]
    assert installed["installation"]["status"] == "running"
    reservation = server.admin.get(f"/reservations/{reserved['reservation']['id']}").json()
    installation = server.admin.get(f"/installations/{installed['installation']['id']}").json()
    assert reservation["state"] == "active" and reservation["heartbeat"] == 10
    assert installation["status"] == "running" and installation["reservation"] == reservation["id"]
    # without the heartbeats it would have been returned (and the installation cancelled) mid-install
    assert when(installation["finished_at"]) - when(reservation["start"]) > timedelta(seconds=10)
    assert when(reservation["last_heartbeat"]) - when(reservation["start"]) >= timedelta(seconds=5)
