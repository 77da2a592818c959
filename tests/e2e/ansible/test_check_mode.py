"""Check mode tells the truth, and a failing task changes nothing - real ansible-playbook, real server.

Every case the real run refuses is refused by `--check` too, with the same message, and neither
leaves anything behind; a valid task in check mode reports changed and changes nothing. Each claim
is checked over the API.
"""
from __future__ import annotations

import re

import pytest

from tests.e2e.ansible.test_playbooks import ROOT, ansible_env, playbook, results
from tests.support.live import LiveServer

TREE = {"name": "Fedora-40", "arch": "x86_64", "url": "http://mirror.lab.test/f40/os/",
        "kernel": "images/pxeboot/vmlinuz", "initrd": "images/pxeboot/initrd.img"}
IPMI = {"driver": "ipmitool", "address": "bmc.lab.test", "user": "root", "password": "pw"}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A site capping reservations at 7 days. m1 is held by bob; m2 and m3 are free (m3 without power);
    p1 has a power driver (no worker runs its commands); automated a1; bob books 10.0.0.1."""
    # no worker: queued power commands stay as they are, so "nothing changed" can be compared
    live = LiveServer(tmp_path_factory.mktemp("server") / "data", workers=1, threads=4, run_worker=False,
                      settings={"max_reservation_duration": "7d"}).start()
    try:
        live.alice, live.bob = live.add_users("alice", "bob", then=(
            *(("system", "add", fqdn, "--arch", "x86_64") for fqdn in ("m1.lab.test", "m2.lab.test", "m3.lab.test")),
            ("system", "add", "a1.lab.test", "--arch", "x86_64", "--condition", "automated")))
        live.admin.post("/systems", json={"fqdn": "p1.lab.test", "arch": "x86_64", "condition": "manual",
                                          "power": IPMI, "netboot": {"mac": "52:54:00:cc:00:01"},
                                          "release_action": "leave_on"}).raise_for_status()
        live.admin.post("/distro-trees", json=TREE).raise_for_status()
        live.bob.post("/reservations", json={"system": "m1.lab.test", "duration": "4h"}).raise_for_status()
        live.alice.post("/reservations", json={"system": "m3.lab.test", "duration": "4h"}).raise_for_status()
        live.admin.put("/schedules/ip", json={"default_duration": "2h"}).raise_for_status()
        live.bob.post("/schedules/ip/reservations", json={"resource_id": "10.0.0.1"}).raise_for_status()
        yield live
    finally:
        live.stop()


def state(server) -> dict:
    """What the tasks here could change, as the API shows it."""
    admin = server.admin
    return {
        # seconds_left counts down by itself
        "reservations": [{k: v for k, v in r.items() if k != "seconds_left"}
                         for r in admin.get("/reservations", params={"active": "true"}).json()],
        "systems": admin.get("/systems").json(),
        "loans": [admin.get(f"/systems/{s['fqdn']}/loan").status_code for s in admin.get("/systems").json()],
        "groups": admin.get("/groups").json(),
        "pools": admin.get("/pools").json(),
        "jobs": admin.get("/jobs").json(),
        "bookings": admin.get("/schedules/ip/reservations").json(),
        "commands": [admin.get(f"/systems/{s}/commands").json() for s in ("p1.lab.test", "m2.lab.test")],
        "installations": admin.get("/systems/m3.lab.test").json().get("installation"),
    }


def timeless(message: str) -> str:
    """A message with its times (the moment it was said moves them) left out."""
    return re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "<time>", message)


REFUSED = [
    ("past the site maximum", "alice", {"lablease.lab.reservation": {"system": "m2.lab.test", "duration": "30d"}}),
    ("over someone's booking", "alice", {"lablease.lab.reservation": {"system": "m1.lab.test", "duration": "1h"}}),
    ("power without a driver", "admin", {"lablease.lab.power": {"system": "m2.lab.test", "state": "on"}}),
    ("power not allowed", "alice", {"lablease.lab.power": {"system": "p1.lab.test", "state": "on"}}),
    ("provision without power", "alice", {"lablease.lab.provision": {"system": "m3.lab.test", "distro": "Fedora-40"}}),
    ("system arch=bogus", "admin", {"lablease.lab.system": {"fqdn": "new.lab.test", "arch": "bogus"}}),
    ("loan to nobody", "admin", {"lablease.lab.loan": {"system": "m2.lab.test", "recipient": "nobody"}}),
    ("group member nobody", "alice", {"lablease.lab.group": {"name": "g3", "members": ["bob", "nobody"]}}),
    ("schedule on a held resource", "alice", {"lablease.lab.schedule": {"subject": "ip", "resource_id": "10.0.0.1"}}),
    ("job with malformed XML", "alice", {"lablease.lab.job": {"xml": "<job><recipeSet><recipe></job>"}}),
    ("pool with an unknown system", "admin", {"lablease.lab.pool": {"name": "p3", "systems": ["m2.lab.test",
                                                                                             "nope.lab.test"]}}),
]


@pytest.mark.parametrize("case, user, task", REFUSED, ids=[case for case, _, _ in REFUSED])
def test_check_mode_fails_where_the_real_run_fails_and_nothing_changes(server, tmp_path, case, user, task):
    env = ansible_env(server, user=user)
    path = playbook(tmp_path, [dict(task, name=case)])
    before = state(server)
    [checked] = results(env, path, "--check")
    assert checked["failed"], checked
    assert state(server) == before
    [real] = results(env, path)
    assert real["failed"] and timeless(real["msg"]) == timeless(checked["msg"]), (real, checked)
    assert not real.get("changed") and state(server) == before  # the failed task changed nothing


VALID = [
    ("alice", {"lablease.lab.reservation": {"system": "m2.lab.test", "duration": "1h"}}, "reservation"),
    ("admin", {"lablease.lab.power": {"system": "p1.lab.test", "state": "on"}}, None),
    ("admin", {"lablease.lab.system": {"fqdn": "new.lab.test", "arch": "x86_64"}}, "system"),
    ("admin", {"lablease.lab.loan": {"system": "m2.lab.test", "recipient": "bob"}}, "loan"),
    ("alice", {"lablease.lab.group": {"name": "g4", "members": ["bob"]}}, "group"),
    ("admin", {"lablease.lab.pool": {"name": "p4", "systems": ["m2.lab.test", "a1.lab.test"]}}, "pool"),
    ("alice", {"lablease.lab.schedule": {"subject": "ip", "resource_id": "10.0.0.2"}}, "booking"),
    ("alice", {"lablease.lab.job": {"xml": "<job><recipeSet><recipe/></recipeSet></job>"}}, None),
    ("alice", {"lablease.lab.provision": {"system": "p1.lab.test", "distro": "Fedora-40"}}, None),
]


@pytest.mark.parametrize("user, task, key", VALID, ids=[next(iter(task)).split(".")[-1] for _, task, _ in VALID])
def test_a_valid_task_in_check_mode_reports_changed_and_changes_nothing(server, tmp_path, user, task, key):
    env = ansible_env(server, user=user)
    holding = "provision" in next(iter(task))
    if holding:  # provisioning needs the system held (a check of a provision is only as good as what is held)
        made = server.alice.post("/reservations", json={"system": "p1.lab.test", "duration": "1h"})
        made.raise_for_status()
    try:
        before = state(server)
        [checked] = results(env, playbook(tmp_path, [dict(task, name="valid")]), "--check")
        assert checked["changed"] and not checked["failed"], checked
        if key:
            assert checked[key] and checked[key].get("id") is None  # what would be made, and nothing was
        assert state(server) == before
    finally:
        if holding:
            server.alice.delete(f"/reservations/{made.json()['id']}").raise_for_status()


def test_a_failing_pool_or_group_task_leaves_the_existing_object_as_it_was(server, tmp_path):
    env = ansible_env(server, user="admin")
    server.admin.post("/pools", json={"name": "p5"}).raise_for_status()
    server.admin.post("/groups", json={"name": "g5"}).raise_for_status()
    before = state(server)
    path = playbook(tmp_path, [
        {"name": "pool", "lablease.lab.pool": {"name": "p5", "description": "gpus",
                                               "systems": ["m2.lab.test", "nope.lab.test"]},
         "ignore_errors": True},
        {"name": "group", "lablease.lab.group": {"name": "g5", "description": "team",
                                                 "members": ["bob", "nobody"]}}])
    pool, group = results(env, path)
    assert pool["failed"] and "nope.lab.test" in pool["msg"] and not pool["changed"]
    assert group["failed"] and "nobody" in group["msg"] and not group["changed"]
    assert state(server) == before
    assert server.admin.get("/pools/p5").json()["systems"] == [] and server.admin.get("/pools/p5").json()[
        "description"] in (None, "")


def test_the_lease_role_and_the_docs_job_example_run_in_check_mode(server, tmp_path):
    work = tmp_path / "work.yml"
    work.write_text("- name: Work on the system\n  ansible.builtin.debug:\n    msg: \"working on {{ lease_host }}\"\n")
    env = ansible_env(server, user="alice")
    if server.admin.get("/pools/gpus").status_code == 404:  # the docs' example prefers it
        server.admin.post("/pools", json={"name": "gpus"}).raise_for_status()
    before = state(server)
    for name, role_vars in (("by-name.yml", {"lease_system": "m2.lab.test", "lease_distro": "Fedora-40"}),
                            ("by-requirements.yml", {"lease_requires": {"field": "arch", "op": "=",
                                                                        "value": "x86_64"}})):
        path = playbook(tmp_path, [{"name": "lease", "ansible.builtin.include_role": {"name": "lablease.lab.lease"},
                                    "vars": {"lease_duration": "1h", "lease_tasks": str(work), **role_vars}}], name)
        outcome = results(env, path, "--check")
        assert not any(r["failed"] for r in outcome), [r.get("msg") for r in outcome if r["failed"]]
        assert state(server) == before
    # docs/ansible.md's job -> recipe example, as written there
    example = docs_example("## `lablease.lab.job` and `lablease.lab.recipe`")
    outcome = results(env, playbook(tmp_path, example, "job-recipe.yml"), "--check")
    assert not any(r["failed"] for r in outcome), [r.get("msg") for r in outcome if r["failed"]]
    assert outcome[0]["changed"] and state(server) == before


def docs_example(heading: str) -> list:
    """The first YAML block after a heading of docs/ansible.md."""
    import yaml

    text = (ROOT / "docs" / "ansible.md").read_text()
    block = text[text.index(heading):].split("```yaml\n", 1)[1].split("```", 1)[0]
    return yaml.safe_load(block)
