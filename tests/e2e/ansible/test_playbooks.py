"""The collection end to end: real `ansible-playbook` runs against a real `lablease-server serve`.

Each test gets a fresh server on SQLite (the playbooks do not depend on the
database; the server's own suite covers PostgreSQL). Every claim is checked
over the API, as a user would: the reservation exists, was returned, or was
never made.
"""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
import yaml

from tests.support.live import Api, LiveServer

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent
MODULES = ROOT / "plugins" / "modules"
SYSTEMS = ("s1.lab.test", "s2.lab.test", "s3.lab.test")


@pytest.fixture
def server(tmp_path):
    """A real `lablease-server serve` (API and worker) with users alice and bob and three manual systems."""
    live = LiveServer(tmp_path / "data", workers=1, threads=4).start()
    try:
        live.alice, live.bob = live.add_users("alice", "bob", then=tuple(
            ("system", "add", fqdn, "--arch", "x86_64") for fqdn in SYSTEMS))
        warm_up(live)
        yield live
    finally:
        live.stop()


def warm_up(live) -> None:
    """Make sure the server answers reads before the playbooks run."""
    deadline = time.monotonic() + 20
    good = 0
    while good < 3 and time.monotonic() < deadline:
        answers = [live.admin.get(path).status_code for path in ("/systems/s1.lab.test", "/systems", "/reservations")]
        good = good + 1 if all(code == 200 for code in answers) else 0
    assert good >= 3, "the server kept answering 500 after start; see its log"


def ansible_env(server, user="alice", **extra) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "LABLEASE_"))}
    env.update({
        "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"),
        "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".collections"),
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_FORCE_COLOR": "0",
        "LABLEASE_URL": server.url,
        "LABLEASE_TOKEN": server.tokens[user] if user else "",
    })
    env.update(extra)
    return env


def playbook(tmp_path, tasks: list, name="play.yml", **play) -> Path:
    path = tmp_path / name
    document = [{"name": "test", "hosts": "localhost", "gather_facts": False,
                 "vars": {"ansible_python_interpreter": "{{ ansible_playbook_python }}"}, "tasks": tasks, **play}]
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def run(env, *args, check=False) -> subprocess.CompletedProcess:
    result = subprocess.run([str(BIN / args[0]), *args[1:]], cwd=ROOT, env=env, capture_output=True, text=True,
                            timeout=300)
    if check and result.returncode != 0:
        raise AssertionError(f"{' '.join(args)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}")
    return result


def results(env, path, *options) -> list[dict]:
    """Each task's result, as recorded by callbacks/record.py (the default output stays for people)."""
    record = Path(str(path) + f".{time.monotonic_ns()}.jsonl")
    env = dict(env, ANSIBLE_CALLBACK_PLUGINS=str(Path(__file__).parent / "callbacks"),
               ANSIBLE_CALLBACKS_ENABLED="record", LABLEASE_TEST_RECORD=str(record))
    proc = run(env, "ansible-playbook", str(path), *options)
    if not record.exists():
        raise AssertionError(f"ansible-playbook recorded nothing ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    entries = [json.loads(line) for line in record.read_text().splitlines()]
    return [dict(e["result"], failed=e["status"] == "failed") for e in entries if e["host"] == "localhost"]


def reserve_task(**args) -> dict:
    return {"name": "reserve", "lablease.lab.reservation": {"system": "s1.lab.test", **args}}


def active(server, system="s1.lab.test") -> list[dict]:
    answer = server.admin.get("/reservations", params={"system": system, "active": "true"})
    answer.raise_for_status()
    return answer.json()


def history(server, system="s1.lab.test") -> list[dict]:
    return server.admin.get("/reservations", params={"system": system}).json()


def test_create_rerun_check_diff_absent(server, tmp_path):
    env = ansible_env(server)
    present = playbook(tmp_path, [reserve_task(duration="1h")])

    # check mode: says it would change, writes nothing
    [checked] = results(env, present, "--check")
    assert checked["changed"] is True and not checked["failed"]
    assert checked["reservation"]["user"] == "alice"
    assert history(server) == []

    # --diff shows the change, on the default output a person reads
    proc = run(env, "ansible-playbook", str(present), "--diff", check=True)
    assert "changed: [localhost]" in proc.stdout
    assert '+    "system": "s1.lab.test"' in proc.stdout and '+    "user": "alice"' in proc.stdout
    [held] = active(server)
    assert held["user"] == "alice" and held["state"] == "active"
    end = datetime.fromisoformat(held["end"].replace("Z", "+00:00"))
    assert timedelta(minutes=58) < end - datetime.now(timezone.utc) <= timedelta(hours=1)

    # re-run: not changed, nothing new
    [again] = results(env, present)
    assert again["changed"] is False and again["reservation"]["id"] == held["id"]
    assert len(history(server)) == 1

    # a later end extends, and says so
    [extended] = results(env, playbook(tmp_path, [reserve_task(duration="3h")], "extend.yml"))
    assert extended["changed"] is True
    assert active(server)[0]["end"] == extended["reservation"]["end"] != held["end"]

    # absent: check mode keeps it, then it is returned, then nothing to do
    absent = playbook(tmp_path, [reserve_task(state="absent")], "absent.yml")
    [would] = results(env, absent, "--check")
    assert would["changed"] is True and len(active(server)) == 1
    [returned] = results(env, absent)
    assert returned["changed"] is True and returned["returned"] == [held["id"]]
    assert active(server) == []
    assert history(server)[0]["state"] == "returned"
    [nothing] = results(env, absent)
    assert nothing["changed"] is False

    # the next run books a new reservation (its request_id is not the ended one's)
    [fresh] = results(env, present)
    assert fresh["changed"] is True and fresh["reservation"]["id"] != held["id"]
    assert len(active(server)) == 1


def test_conflict_names_the_holder(server, tmp_path):
    made = server.bob.post("/reservations", json={"system": "s2.lab.test", "duration": "2h"}).json()
    env = ansible_env(server)
    path = playbook(tmp_path, [reserve_task(system="s2.lab.test", duration="1h")])
    for options in ((), ("--check",)):
        [failed] = results(env, path, *options)
        assert failed["failed"] is True
        # the end as the server writes every time, to the second (it used to be cut to the minute here when the
        # seconds were 00, which no answer does: the test failed for a reservation made at hh:mm:00)
        assert failed["msg"] == f"s2.lab.test is reserved by bob until {made['end']}"
    assert [r["user"] for r in active(server, "s2.lab.test")] == ["bob"]


def test_bad_input_fails_with_a_message_to_act_on(server, tmp_path):
    env = ansible_env(server)

    def failure(path, env=env):
        [result] = results(env, path)
        assert result.get("failed") is True, result
        return result["msg"]

    unknown = playbook(tmp_path, [reserve_task(system="nope.lab.test")], "unknown.yml")
    assert failure(unknown).startswith("no system named nope.lab.test on the lablease server at " + server.url)
    bad = playbook(tmp_path, [reserve_task(duration="soonish")], "bad.yml")
    assert failure(bad) == "duration: 'soonish' is not a duration (try 4h, 30m, 2d, 1w, 1h30m, PT4H or 1:30:00)"
    ok = playbook(tmp_path, [reserve_task(duration="1h")], "ok.yml")
    assert "set the token option or LABLEASE_TOKEN" in failure(ok, ansible_env(server, user=None))
    wrong = ansible_env(server, LABLEASE_TOKEN="llt_not-a-token")
    assert "refused the token" in failure(ok, wrong)
    expiring = server.admin_cli("token", "create", "alice", "--name", "short", "--expires", "1s").strip()
    deadline = time.monotonic() + 10
    while Api(server.url, expiring).get("/me").status_code != 401:  # the server's clock passed its expiry
        assert time.monotonic() < deadline, "the token was still accepted 10 s after it expired"
        time.sleep(0.1)
    message = failure(ok, ansible_env(server, LABLEASE_TOKEN=expiring))
    assert "refused the token" in message and "expired" in message
    down = ansible_env(server, LABLEASE_URL="http://127.0.0.1:9")
    message = failure(playbook(tmp_path, [reserve_task(duration="1h", retries=1)], "down.yml"), down)
    assert message.startswith("cannot reach the lablease server at http://127.0.0.1:9")
    assert history(server) == []


def test_adhoc_form(server):
    env = ansible_env(server)
    proc = run(env, "ansible", "localhost", "-e", f"ansible_python_interpreter={sys.executable}",
               "-m", "lablease.lab.reservation", "-a", "system=s1.lab.test duration=4h", check=True)
    assert "CHANGED" in proc.stdout
    [held] = active(server)
    assert held["user"] == "alice"


def examples(module: str) -> list:
    tree = ast.parse((MODULES / f"{module}.py").read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and node.targets[0].id == "EXAMPLES":
            return yaml.safe_load(node.value.value)
    raise AssertionError(f"{module} has no EXAMPLES")


def test_every_modules_examples_parse(server, tmp_path):
    env = ansible_env(server)
    for module in sorted(p.stem for p in MODULES.glob("*.py")):
        tasks = examples(module)
        assert tasks and all(isinstance(t, dict) and "name" in t for t in tasks), module
        run(env, "ansible-playbook", "--syntax-check", str(playbook(tmp_path, tasks, f"{module}.yml")), check=True)


def run_examples(server, tmp_path, module, user, defaults=True):
    """Run a module's EXAMPLES as one play, the connection set once through the action group."""
    play = {}
    if defaults:
        play["module_defaults"] = {"group/lablease.lab.api": {"url": server.url, "token": server.tokens[user]}}
    path = playbook(tmp_path, examples(module), f"{module}-run.yml", **play)
    proc = run(ansible_env(server, user=user), "ansible-playbook", str(path), check=True)
    return proc.stdout


def test_main_examples_run(server, tmp_path):
    # reservation, as alice: reserve with heartbeat, keepalive, extend, return
    run_examples(server, tmp_path, "reservation", "alice")
    assert active(server) == []
    [last] = history(server)
    assert last["heartbeat"] == 600 and last["last_heartbeat"] and last["state"] == "returned"
    extended = server.alice.get(f"/reservations/{last['id']}/activity").json()
    assert any(e["action"] == "extended" and str(e["new"]).startswith("2030-01-01") for e in extended), extended

    # reservation_info and system_info, as alice (system_info's example reserves the first free one)
    run_examples(server, tmp_path, "reservation_info", "alice")
    run_examples(server, tmp_path, "system_info", "alice")
    held = server.alice.get("/reservations", params={"user": "me", "active": "true"}).json()
    assert [r["system"] for r in held] == ["s1.lab.test"]

    # system, as the administrator: add, configure, break, remove
    run_examples(server, tmp_path, "system", "admin")
    s3 = server.admin.get("/systems/s3.lab.test").json()
    assert s3["condition"] == "removed" and s3["cpus"] == 16
    assert s3["power"] == {"driver": "ipmitool", "address": "bmc-s3.lab.test", "user": "admin"}
    assert s3["attributes"] == {"gpu": ["a100"], "rack": ["r12"]}

    # schedule, as alice, once an administrator made the subject
    server.admin.put("/schedules/vlans", json={"default_duration": "1d"}).raise_for_status()
    out = run_examples(server, tmp_path, "schedule", "alice")
    assert "vlan-42 is mine until" in out
    assert server.alice.get("/schedules/vlans/reservations").json() == []


def plain(value):
    """ansible-inventory --list shows values from the API as {"__ansible_unsafe": ...} (they are never templated)."""
    if isinstance(value, dict):
        if set(value) == {"__ansible_unsafe"}:
            return value["__ansible_unsafe"]
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def test_inventory_plugin_example(server, tmp_path):
    server.alice.post("/reservations", json={"system": "s2.lab.test", "duration": "2h"}).raise_for_status()
    server.admin.patch("/systems/s2.lab.test", json={"attributes": {"gpu": "a100"}, "lab": "lab-a"}).raise_for_status()
    source = ast.parse((ROOT / "plugins" / "inventory" / "systems.py").read_text())
    text = next(n.value.value for n in source.body if isinstance(n, ast.Assign) and n.targets[0].id == "EXAMPLES")
    config = yaml.safe_load(text)
    config["url"] = server.url
    path = tmp_path / "lab.lablease.yml"
    path.write_text(yaml.safe_dump(config))
    env = ansible_env(server)
    listing = plain(json.loads(run(env, "ansible-inventory", "-i", str(path), "--list", check=True).stdout))
    assert listing["gpu"]["hosts"] == ["s2.lab.test"]
    assert listing["arch_x86_64"]["hosts"] == ["s2.lab.test"]
    assert listing["lab_lab_a"]["hosts"] == ["s2.lab.test"]
    hostvars = listing["_meta"]["hostvars"]["s2.lab.test"]
    assert hostvars["lablease_reserved_by"] == "alice" and hostvars["lease_ends"] == hostvars["lablease_reservation_end"]
    assert set(listing["_meta"]["hostvars"]) == {"s2.lab.test"}  # systems: reserved -> only what alice holds

    # by pool, with the pools as host variables and keyed groups
    server.admin.post("/pools", json={"name": "gpus"}).raise_for_status()
    server.admin.post("/pools/gpus/systems", json={"fqdn": "s3.lab.test"}).raise_for_status()
    pooled = tmp_path / "pool.lablease.yml"
    pooled.write_text(yaml.safe_dump({"plugin": "lablease.lab.systems", "url": server.url, "pool": "gpus",
                                      "keyed_groups": [{"key": "lablease_pools", "prefix": "pool"}]}))
    by_pool = plain(json.loads(run(env, "ansible-inventory", "-i", str(pooled), "--list", check=True).stdout))
    assert set(by_pool["_meta"]["hostvars"]) == {"s3.lab.test"} and by_pool["pool_gpus"]["hosts"] == ["s3.lab.test"]
    assert by_pool["_meta"]["hostvars"]["s3.lab.test"]["lablease_pools"] == ["gpus"]

    # Cacheable: with the cache on, a second run answers from the cache, even with the server down (every system:
    # `systems: reserved` is never cached, test_lease_role.py shows it)
    del config["systems"]
    config.update(cache=True, cache_plugin="ansible.builtin.jsonfile", cache_connection=str(tmp_path / "cache"),
                  cache_timeout=600)
    path.write_text(yaml.safe_dump(config))
    first = plain(json.loads(run(env, "ansible-inventory", "-i", str(path), "--list", check=True).stdout))
    server.stop()
    cached = plain(json.loads(run(env, "ansible-inventory", "-i", str(path), "--list", check=True).stdout))
    assert cached["_meta"] == first["_meta"] and cached["gpu"]["hosts"] == ["s2.lab.test"]


def test_ci_pattern_returns_the_system_whatever_happens(server, tmp_path):
    ci = ROOT / "playbooks" / "ci_lease.yml"
    env = ansible_env(server)
    run(env, "ansible-playbook", str(ci), check=True)
    assert active(server) == []
    [passed] = history(server)
    assert passed["state"] == "returned" and passed["heartbeat"] == 900 and passed["last_heartbeat"]

    failing = run(dict(env, CI_FAIL="1"), "ansible-playbook", str(ci))
    assert failing.returncode != 0 and "the tasks on s1.lab.test failed: CI_FAIL was set" in failing.stdout
    assert active(server) == []
    assert [r["state"] for r in history(server)] == ["returned", "returned"]


def test_operator_playbook(server, tmp_path):  # playbooks/demo.yml runs in test_demo.py, as `make demo`
    env = ansible_env(server)
    operator = "playbooks/operator.yml"
    run(env, "ansible-playbook", operator, "-t", "reserve", "-e", "system=s3.lab.test", check=True)
    assert [r["user"] for r in active(server, "s3.lab.test")] == ["alice"]
    out = run(env, "ansible-playbook", operator, "-t", "mine", check=True).stdout
    assert "s3.lab.test" in out
    run(env, "ansible-playbook", operator, "-t", "return", "-e", "system=s3.lab.test", check=True)
    assert active(server, "s3.lab.test") == []


def test_readme_adhoc_line_is_the_tested_one():
    readme = (ROOT / "README.md").read_text()
    assert textwrap.dedent("ansible localhost -m lablease.lab.reservation -a 'system=s1.lab.test duration=4h'") in readme


def test_the_system_module_keeps_one_spelling_of_a_mac_and_refuses_a_shared_one(server, tmp_path):
    """A MAC in another spelling is the same MAC: no change on s1, and refused on s2 naming s1 (provisioning s2
    would have written s1's boot file)."""
    env = ansible_env(server, user="admin")
    tasks = [{"name": name, "lablease.lab.system": {"fqdn": fqdn, "netboot": {"mac": mac}}, "ignore_errors": True}
             for name, fqdn, mac in (("set", "s1.lab.test", "52:54:00:BB:00:01"),
                                     ("again", "s1.lab.test", "525400bb0001"),
                                     ("shared", "s2.lab.test", "52-54-00-bb-00-01"))]
    first, again, shared = results(env, playbook(tmp_path, tasks))
    assert first["changed"] and first["system"]["netboot"]["mac"] == "52:54:00:bb:00:01"
    assert not again["failed"] and again["changed"] is False
    assert shared["failed"] and "52:54:00:bb:00:01 is already s1.lab.test's" in shared["msg"]
    assert server.admin.get("/systems/s2.lab.test").json()["netboot"] == {}
