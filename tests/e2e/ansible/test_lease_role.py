"""The lease role (lease_system path) and the inventory plugin's options, end to end.

One real `lablease-server serve` for the whole module; each test uses its own systems, so they do not
disturb each other. Every claim is checked over the API, as a user would.
"""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest
import yaml

from tests.e2e.ansible.test_playbooks import ROOT, ansible_env, plain, playbook, run, warm_up
from tests.support.live import LiveServer

SYSTEMS = ("m1.lab.test", "m2.lab.test", "m3.lab.test", "m4.lab.test", "m5.lab.test", "m6.lab.test",
           "s1.lab.test")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """Users alice and bob; manual systems m1..m6 (and s1, which playbooks/ci_lease.yml leases)."""
    live = LiveServer(tmp_path_factory.mktemp("server") / "data", workers=1, threads=4).start()
    try:
        live.alice, live.bob = live.add_users("alice", "bob", then=tuple(
            ("system", "add", fqdn, "--arch", "x86_64") for fqdn in SYSTEMS))
        warm_up(live)
        yield live
    finally:
        live.stop()


def when(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def reservation(server, rid):
    return server.admin.get(f"/reservations/{rid}").json()


def held(server, system):
    return server.admin.get("/reservations", params={"system": system, "active": "true"}).json()


def tasks_file(tmp_path, name, fail=False):
    path = tmp_path / name
    task = ({"name": "Fail", "ansible.builtin.fail": {"msg": "broken on purpose"}} if fail else
            {"name": "Work", "ansible.builtin.debug": {"msg": "working on {{ lease_host }}"}})
    path.write_text(yaml.safe_dump([task]))
    return path


def lease_play(tmp_path, name, system, work, play=None, **role_vars):
    return playbook(tmp_path, [{"name": "lease", "ansible.builtin.include_role": {"name": "lablease.lab.lease"},
                                "vars": {"lease_system": system, "lease_duration": "1h", "lease_tasks": str(work),
                                         **role_vars}}], name, **(play or {}))


# -- the role returns only what it made (or what it was handed) --------------------------------------------


def test_a_reservation_the_role_did_not_make_survives_it(server, tmp_path):
    mine = server.alice.post("/reservations", json={"system": "m2.lab.test", "duration": "3h",
                                                    "purpose": "bisecting the NIC driver"}).json()
    env = ansible_env(server)
    proc = run(env, "ansible-playbook", str(lease_play(tmp_path, "found.yml", "m2.lab.test",
                                                       tasks_file(tmp_path, "work.yml"))))
    # the role refuses to use it (it would return it at the end), says why and what to do ...
    assert proc.returncode != 0
    assert f"you already hold reservation {mine['id']} on m2.lab.test" in proc.stdout
    assert "lease_reservation_id" in proc.stdout and "working on" not in proc.stdout
    # ... and leaves it exactly as it was: not returned, not extended, no heartbeat added
    after = reservation(server, mine["id"])
    assert after["state"] == "active" and after["returned_at"] is None
    assert after["end"] == mine["end"] and after["heartbeat"] is None
    assert [r["id"] for r in held(server, "m2.lab.test")] == [mine["id"]]

    # handed over explicitly, the role uses it as it is and returns it at the end
    proc = run(env, "ansible-playbook", str(lease_play(tmp_path, "handed.yml", "m2.lab.test",
                                                       tasks_file(tmp_path, "work.yml"),
                                                       lease_reservation_id=mine["id"])), check=True)
    assert "working on m2.lab.test" in proc.stdout
    assert reservation(server, mine["id"])["state"] == "returned"

    # a reservation the role made in this run is returned (and only that one)
    run(env, "ansible-playbook", str(lease_play(tmp_path, "own.yml", "m2.lab.test", tasks_file(tmp_path, "work.yml"))),
        check=True)
    assert held(server, "m2.lab.test") == []
    made = server.admin.get("/reservations", params={"system": "m2.lab.test", "user": "alice"}).json()
    assert [r["state"] for r in made] == ["returned", "returned"]


def test_handing_over_a_reservation_of_another_system_is_refused(server, tmp_path):
    other = server.alice.post("/reservations", json={"system": "m3.lab.test", "duration": "1h"}).json()
    env = ansible_env(server)
    proc = run(env, "ansible-playbook", str(lease_play(tmp_path, "wrong.yml", "m4.lab.test",
                                                       tasks_file(tmp_path, "work.yml"),
                                                       lease_reservation_id=other["id"])))
    assert proc.returncode != 0
    assert f"reservation {other['id']} is on m3.lab.test, not m4.lab.test" in proc.stdout
    assert reservation(server, other["id"])["state"] == "active" and held(server, "m4.lab.test") == []
    server.alice.delete(f"/reservations/{other['id']}").raise_for_status()


def test_handing_over_a_recipes_reservation_is_refused_before_any_task(server, tmp_path):
    server.admin_cli("system", "add", "j1.lab.test", "--arch", "x86_64", "--condition", "automated")
    job = server.alice.post("/jobs", json={"recipe_sets": [{"recipes": [{"host_requires": {
        "field": "hostname", "op": "=", "value": "j1.lab.test"}}]}]})
    assert job.status_code == 201, job.text
    [recipe] = [r for s in job.json()["recipe_sets"] for r in s["recipes"]]
    recipe = server.admin.get(f"/recipes/{recipe['id']}").json()
    assert recipe["status"] == "running" and recipe["reservation"], recipe
    env = ansible_env(server)
    proc = run(env, "ansible-playbook", str(lease_play(tmp_path, "recipes.yml", "j1.lab.test",
                                                       tasks_file(tmp_path, "work.yml"),
                                                       lease_reservation_id=recipe["reservation"])))
    assert proc.returncode != 0 and "working on" not in proc.stdout
    assert f"reservation {recipe['reservation']} is a recipe's (kind recipe)" in proc.stdout
    assert reservation(server, recipe["reservation"])["state"] == "active"
    assert server.admin.get(f"/recipes/{recipe['id']}").json()["status"] == "running"
    server.alice.post(f"/jobs/{job.json()['id']}/cancel").raise_for_status()


# -- module_defaults, the reasons of failures while acquiring ------------------------------------------------


def test_the_role_follows_module_defaults(server, tmp_path):
    env = ansible_env(server, user=None, LABLEASE_URL="")  # no connection from the environment at all
    defaults = {"module_defaults": {"group/lablease.lab.api": {"url": server.url, "token": server.tokens["bob"]}}}
    proc = run(env, "ansible-playbook", str(lease_play(tmp_path, "defaults.yml", "m5.lab.test",
                                                       tasks_file(tmp_path, "work.yml"), play=defaults)), check=True)
    assert "working on m5.lab.test" in proc.stdout
    [made] = server.admin.get("/reservations", params={"system": "m5.lab.test", "user": "bob"}).json()
    assert made["state"] == "returned"


@pytest.mark.parametrize("role_vars, reason", [
    ({"lease_duration": "soonish"},
     "reserving m5.lab.test failed: duration: 'soonish' is not a duration (try 4h, 30m, 2d, 1w, 1h30m, PT4H or 1:30:00)"),
    ({"lease_system": "nope.lab.test"},
     "reserving nope.lab.test failed: no system named nope.lab.test"),
    ({"lease_heartbeat": "5s"}, "reserving m5.lab.test failed: heartbeat: must be at least 10 seconds"),
])
def test_a_failure_while_acquiring_says_the_servers_reason(server, tmp_path, role_vars, reason):
    env = ansible_env(server)
    proc = run(env, "ansible-playbook", str(lease_play(tmp_path, "bad.yml", "m5.lab.test",
                                                       tasks_file(tmp_path, "work.yml"), **role_vars)))
    assert proc.returncode != 0
    assert reason in proc.stdout
    assert "the tasks on" not in proc.stdout and "working on" not in proc.stdout
    assert held(server, "m5.lab.test") == []


# -- CI_KEEP_ON_FAILURE keeps the system for the hours it promises --------------------------------------------


def test_ci_keep_on_failure_keeps_the_system_four_hours(server, tmp_path):
    env = ansible_env(server, CI_FAIL="1", CI_KEEP_ON_FAILURE="true")
    proc = run(env, "ansible-playbook", str(ROOT / "playbooks" / "ci_lease.yml"))
    assert proc.returncode != 0 and "CI_FAIL was set" in proc.stdout
    [kept] = held(server, "s1.lab.test")
    # kept four hours from now: its heartbeat (15m) no longer applies, so nobody has to send one
    assert kept["heartbeat"] is None and kept["due"] == kept["end"]
    left = when(kept["end"]) - datetime.now(timezone.utc)
    assert timedelta(hours=3, minutes=58) < left <= timedelta(hours=4)
    assert f"s1.lab.test is kept for you until {kept['end']}" in proc.stdout
    server.alice.delete(f"/reservations/{kept['id']}").raise_for_status()


# -- the inventory plugin ----------------------------------------------------------------------------------


def inventory(env, path, check=True):
    proc = run(env, "ansible-inventory", "-i", str(path), "--list", check=check)
    return proc if not check else plain(json.loads(proc.stdout))


def test_a_cached_reserved_inventory_does_not_show_returned_systems(server, tmp_path):
    made = server.bob.post("/reservations", json={"system": "m6.lab.test", "duration": "1h"}).json()
    path = tmp_path / "cached.lablease.yml"
    path.write_text(yaml.safe_dump({"plugin": "lablease.lab.systems", "url": server.url, "systems": "reserved",
                                    "cache": True, "cache_plugin": "ansible.builtin.jsonfile",
                                    "cache_connection": str(tmp_path / "cache"), "cache_timeout": 600}))
    env = ansible_env(server, user="bob")
    assert set(inventory(env, path)["_meta"]["hostvars"]) == {"m6.lab.test"}
    server.bob.delete(f"/reservations/{made['id']}").raise_for_status()
    assert inventory(env, path)["_meta"]["hostvars"] == {}


def test_the_documented_inventory_example_does_not_show_returned_systems(server, tmp_path):
    docs = (ROOT / "docs" / "ansible.md").read_text()
    text = docs.split("# lab.lablease.yml", 1)[1].split("\n", 1)[1].split("```", 1)[0]
    config = yaml.safe_load(text)
    config.update(url=server.url)
    if "cache_connection" in config:
        config["cache_connection"] = str(tmp_path / "cache")
    path = tmp_path / "lab.lablease.yml"
    path.write_text(yaml.safe_dump(config))
    made = server.bob.post("/reservations", json={"system": "m6.lab.test", "duration": "1h"}).json()
    env = ansible_env(server, user="bob")
    assert set(inventory(env, path)["_meta"]["hostvars"]) == {"m6.lab.test"}
    server.bob.delete(f"/reservations/{made['id']}").raise_for_status()
    assert "m6.lab.test" not in inventory(env, path)["_meta"]["hostvars"]


def test_an_unknown_inventory_option_is_refused(server, tmp_path):
    path = tmp_path / "typo.lablease.yml"
    path.write_text(yaml.safe_dump({"plugin": "lablease.lab.systems", "url": server.url, "sytems": "reserved"}))
    env = ansible_env(server, user="bob")
    proc = inventory(env, path, check=False)
    assert "unknown option 'sytems' (did you mean 'systems'?)" in " ".join(proc.stderr.split())
    assert "m1.lab.test" not in proc.stdout  # not every system, as if the line were not there
    # where a site makes an unparsed inventory fatal, it is
    strict = inventory(dict(env, ANSIBLE_INVENTORY_UNPARSED_FAILED="true"), path, check=False)
    assert strict.returncode != 0 and "unknown option 'sytems'" in " ".join(strict.stderr.split())
