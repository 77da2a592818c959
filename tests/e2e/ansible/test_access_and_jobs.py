"""loan, group, pool, access_policy, job, recipe and the lease role's lease_requires path, end to end.

One real `lablease-server serve` for the whole module (these tests use disjoint systems, groups and pools,
so they do not disturb each other); every claim is checked over the API.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from tests.e2e.ansible.test_playbooks import SYSTEMS, ansible_env, examples, playbook, results, run, warm_up
from tests.support.live import LiveServer

AUTOMATED = ("a1.lab.test", "a2.lab.test", "a3.lab.test")


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """Users alice, bob, carol, dave; manual s1..s3 (loans, pools, policies) and automated a1..a3 (jobs)."""
    live = LiveServer(tmp_path_factory.mktemp("server") / "data", workers=1, threads=4).start()
    try:
        live.alice, live.bob, live.carol, live.dave = live.add_users("alice", "bob", "carol", "dave", then=(
            *(("system", "add", fqdn, "--arch", "x86_64") for fqdn in SYSTEMS),
            *(("system", "add", fqdn, "--arch", "x86_64", "--condition", "automated") for fqdn in AUTOMATED)))
        warm_up(live)
        yield live
    finally:
        live.stop()


def when(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def loan_of(server, fqdn):
    answer = server.admin.get(f"/systems/{fqdn}/loan")
    return None if answer.status_code == 404 else answer.json()


def test_loan(server, tmp_path):
    env = ansible_env(server, user="admin")
    lend = playbook(tmp_path, [{"name": "lend", "lablease.lab.loan": {
        "system": "s1.lab.test", "recipient": "bob", "duration": "1d", "comment": "bring-up"}}], "lend.yml")
    [checked] = results(env, lend, "--check", "--diff")
    assert checked["changed"] and checked["loan"]["recipient"] == "bob" and loan_of(server, "s1.lab.test") is None

    [lent] = results(env, lend)
    assert lent["changed"] and not lent["failed"]
    loan = loan_of(server, "s1.lab.test")
    assert loan["recipient"] == "bob" and loan["comment"] == "bring-up"
    assert timedelta(hours=23) < when(loan["end"]) - datetime.now(timezone.utc) <= timedelta(days=1)
    [again] = results(env, lend)
    assert again["changed"] is False and loan_of(server, "s1.lab.test") == loan

    longer = playbook(tmp_path, [{"name": "longer", "lablease.lab.loan": {
        "system": "s1.lab.test", "recipient": "bob", "duration": "2d"}}], "longer.yml")
    [extended] = results(env, longer)
    assert extended["changed"] and when(loan_of(server, "s1.lab.test")["end"]) - when(loan["end"]) > timedelta(hours=23)
    [same] = results(env, longer)
    assert same["changed"] is False

    other = playbook(tmp_path, [{"name": "carol", "lablease.lab.loan": {"system": "s1.lab.test", "recipient": "carol"}}],
                     "carol.yml")
    [refused] = results(env, other)
    assert refused["failed"] and refused["msg"].startswith("s1.lab.test is lent to bob until 20")

    back = playbook(tmp_path, [{"name": "back", "lablease.lab.loan": {"system": "s1.lab.test", "state": "absent"}}],
                    "back.yml")
    before = loan_of(server, "s1.lab.test")
    [would] = results(env, back, "--check")
    assert would["changed"] and before["recipient"] == "bob" and loan_of(server, "s1.lab.test") == before
    [returned] = results(env, back)
    assert returned["changed"] and returned["returned"]["recipient"] == "bob" and loan_of(server, "s1.lab.test") is None
    [nothing] = results(env, back)
    assert nothing["changed"] is False

    # a new loan with an end ends exactly then, so the next run is not changed
    until = playbook(tmp_path, [{"name": "until", "lablease.lab.loan": {
        "system": "s1.lab.test", "recipient": "bob", "end": "2030-01-01T00:00:00Z"}}] * 2 + [
        {"name": "back", "lablease.lab.loan": {"system": "s1.lab.test", "state": "absent"}}], "until.yml")
    assert [r["changed"] for r in results(env, until)] == [True, False, True]
    assert server.admin.get("/systems/s1.lab.test/loans").json()[0]["end"] == "2030-01-01T00:00:00Z"


def test_group_pool_and_access_policy(server, tmp_path):
    alice = ansible_env(server, user="alice")
    group = {"name": "team", "description": "the team", "members": ["bob"], "owners": ["carol"],
             "webhook_url": "https://chat.example.com/hook", "webhook_secret": "s3cret"}
    make = playbook(tmp_path, [{"name": "group", "lablease.lab.group": group}], "group.yml")
    [checked] = results(alice, make, "--check")
    assert checked["changed"] and server.admin.get("/groups/team").status_code == 404
    [made] = results(alice, make)
    assert made["changed"] and "s3cret" not in str(made)
    shown = server.admin.get("/groups/team").json()
    assert sorted(shown["members"]) == ["alice", "bob", "carol"] and sorted(shown["owners"]) == ["alice", "carol"]
    assert shown["webhook_url"] == "https://chat.example.com/hook" and shown["description"] == "the team"
    [again] = results(alice, make)
    assert again["changed"] is False
    add = playbook(tmp_path, [{"name": "add", "lablease.lab.group": {"name": "team", "members": ["dave"],
                                                                     "members_mode": "add"}}], "add.yml")
    [added] = results(alice, add)
    assert added["changed"] and "dave" in server.admin.get("/groups/team").json()["members"]
    exact = playbook(tmp_path, [{"name": "exact", "lablease.lab.group": {"name": "team", "members": ["bob"]}}],
                     "exact.yml")
    [trimmed] = results(alice, exact, "--diff")
    assert trimmed["changed"]
    # dave goes; the owners (carol, and alice - the caller) stay
    assert sorted(server.admin.get("/groups/team").json()["members"]) == ["alice", "bob", "carol"]

    admin = ansible_env(server, user="admin")
    pool = playbook(tmp_path, [{"name": "pool", "lablease.lab.pool": {
        "name": "lab-pool", "description": "d", "owner_group": "team", "systems": ["s2.lab.test", "s3.lab.test"]}}],
        "pool.yml")
    [checked] = results(admin, pool, "--check")
    assert checked["changed"] and server.admin.get("/pools/lab-pool").status_code == 404
    [made] = results(admin, pool)
    assert made["changed"] and sorted(server.admin.get("/pools/lab-pool").json()["systems"]) == [
        "s2.lab.test", "s3.lab.test"]
    [again] = results(admin, pool)
    assert again["changed"] is False
    only = playbook(tmp_path, [{"name": "only", "lablease.lab.pool": {"name": "lab-pool", "systems": ["s3.lab.test"]}}],
                    "only.yml")
    [exact] = results(alice, only)  # alice is in the owning group
    assert exact["changed"] and server.admin.get("/pools/lab-pool").json()["systems"] == ["s3.lab.test"]

    rules = [{"permission": "reserve", "group": "team"}, {"permission": "edit_system", "user": "bob"}]
    policy = playbook(tmp_path, [{"name": "policy", "lablease.lab.access_policy": {"system": "s3.lab.test",
                                                                                  "rules": rules}}], "policy.yml")
    before = server.admin.get("/systems/s3.lab.test/access-policy").json()["rules"]
    [checked] = results(admin, policy, "--check")
    assert checked["changed"] and server.admin.get("/systems/s3.lab.test/access-policy").json()["rules"] == before
    [made] = results(admin, policy)
    assert made["changed"] and len(made["added"]) == 2
    after = server.admin.get("/systems/s3.lab.test/access-policy").json()["rules"]
    assert len(after) == len(before) + 2
    [again] = results(admin, policy)
    assert again["changed"] is False
    exact = playbook(tmp_path, [{"name": "exact", "lablease.lab.access_policy": {
        "system": "s3.lab.test", "state": "exact", "rules": [{"permission": "view", "everybody": True}]}}],
        "exact-policy.yml")
    [replaced] = results(admin, exact)
    assert replaced["changed"]
    assert [(r["permission"], r["everybody"]) for r in
            server.admin.get("/systems/s3.lab.test/access-policy").json()["rules"]] == [("view", True)]
    [again] = results(admin, exact)
    assert again["changed"] is False
    # bob may no longer reserve s3 (only view): the policy is in force
    assert server.bob.post("/reservations", json={"system": "s3.lab.test", "duration": "1h"}).status_code == 403
    use_pool = playbook(tmp_path, [{"name": "pool policy", "lablease.lab.access_policy": {
        "system": "s3.lab.test", "use_pool_policy": "lab-pool"}}], "use-pool.yml")
    [switched] = results(admin, use_pool)
    assert switched["changed"] and server.admin.get("/systems/s3.lab.test/access-policy").json()[
        "use_pool_policy"] == "lab-pool"
    [again] = results(admin, use_pool)
    assert again["changed"] is False
    own = playbook(tmp_path, [{"name": "own policy", "lablease.lab.access_policy": {
        "system": "s3.lab.test", "use_pool_policy": ""}}], "own.yml")
    [back] = results(admin, own)
    assert back["changed"] and server.admin.get("/systems/s3.lab.test/access-policy").json()["use_pool_policy"] is None

    gone = playbook(tmp_path, [{"name": "no pool", "lablease.lab.pool": {"name": "lab-pool", "state": "absent"}},
                               {"name": "no group", "lablease.lab.group": {"name": "team", "state": "absent"}}],
                    "gone.yml")
    dropped = results(admin, gone)
    assert [r["changed"] for r in dropped] == [True, True]
    assert server.admin.get("/pools/lab-pool").status_code == 404 and server.admin.get("/groups/team").status_code == 404
    assert [r["changed"] for r in results(admin, gone)] == [False, False]


def test_pool_and_access_policy_force_through_an_advance_reservation(server, tmp_path):
    """A change that would break a granted advance reservation is refused ("repeat with force=true");
    the modules' force option makes it anyway, and the reservation goes into error."""
    admin = ansible_env(server, user="admin")
    for fqdn in ("f1.lab.test", "f2.lab.test"):
        server.admin_cli("system", "add", fqdn, "--arch", "x86_64")
    assert server.admin.post("/pools", json={"name": "force-pool"}).status_code == 201
    assert server.admin.post("/pools/force-pool/systems", json={"fqdn": "f1.lab.test"}).status_code == 200
    start = (datetime.now(timezone.utc) + timedelta(days=20)).replace(microsecond=0).isoformat()

    def granted(**fields):
        answer = server.admin.post("/advance-reservations", json={"start": start, "duration": "1h", **fields})
        assert answer.status_code == 201, answer.text
        return answer.json()["id"]

    def state(ar_id):
        return server.admin.get(f"/advance-reservations/{ar_id}").json()["state"]

    in_pool = granted(pools=["force-pool"], hosts=["f1.lab.test"])
    remove = {"name": "force-pool", "systems": ["f1.lab.test"], "systems_mode": "remove"}
    out = playbook(tmp_path, [{"name": "out", "lablease.lab.pool": remove}], "out.yml")
    [refused] = results(admin, out)
    assert refused["failed"] and "repeat with force=true" in refused["msg"] and state(in_pool) == "w"
    assert server.admin.get("/pools/force-pool").json()["systems"] == ["f1.lab.test"]
    forced = playbook(tmp_path, [{"name": "out", "lablease.lab.pool": dict(remove, force=True)}], "out-forced.yml")
    [removed] = results(admin, forced)
    assert removed["changed"] and not removed.get("failed") and removed["pool"]["systems"] == []
    assert state(in_pool) == "E"

    bobs = granted(hosts=["f2.lab.test"], acl=["bob"])
    revoke = {"system": "f2.lab.test", "state": "absent", "rules": [{"permission": "reserve", "everybody": True}]}
    lock = playbook(tmp_path, [{"name": "lock", "lablease.lab.access_policy": revoke}], "lock.yml")
    [refused] = results(admin, lock)
    assert refused["failed"] and "bob may no longer use f2.lab.test" in refused["msg"] and state(bobs) == "w"
    lock = playbook(tmp_path, [{"name": "lock", "lablease.lab.access_policy": dict(revoke, force=True)}],
                    "lock-forced.yml")
    [locked] = results(admin, lock)
    assert locked["changed"] and [r["permission"] for r in locked["removed"]] == ["reserve"] and state(bobs) == "E"


def recipe_task(**args):
    return {"name": "recipe", "lablease.lab.recipe": args}


def test_job_wait_recipe_finish_and_cancel(server, tmp_path):
    env = ansible_env(server, user="alice")
    submit = playbook(tmp_path, [{"name": "job", "lablease.lab.job": {
        "whiteboard": "e2e", "wait": True, "wait_timeout": 60, "wait_sleep": 1,
        "recipe_sets": [{"recipes": [{"host_requires": {"field": "hostname", "op": "=", "value": "a1.lab.test"},
                                      "runtime_limit": "1h"}]}]}}], "job.yml")
    [checked] = results(env, submit, "--check")
    assert checked["changed"] and checked["job_id"] is None and server.alice.get("/jobs").json() == []

    [job] = results(env, submit)
    assert job["changed"] and not job["failed"] and job["systems"] == ["a1.lab.test"]
    recipe = job["recipes"][0]
    assert recipe["status"] == "running" and recipe["reservation"]
    assert server.alice.get(f"/jobs/{job['job_id']}").json()["recipe_sets"][0]["recipes"][0]["status"] == "running"
    [rerun] = results(env, submit)  # the same play again, while its job runs: re-attach, submit nothing
    assert rerun["changed"] is False and rerun["job_id"] == job["job_id"]
    assert len(server.alice.get("/jobs").json()) == 1

    attach = playbook(tmp_path, [{"name": "attach", "lablease.lab.job": {"job_id": job["job_id"], "wait": True}}],
                      "attach.yml")
    [attached] = results(env, attach)
    assert attached["changed"] is False and attached["systems"] == ["a1.lab.test"]

    report = playbook(tmp_path, [recipe_task(recipe_id=recipe["id"], tasks=[{"name": "/smoke", "result": "pass"}])],
                      "report.yml")
    [reported] = results(env, report)
    assert reported["changed"] and server.alice.get(f"/recipes/{recipe['id']}").json()["tasks"][0]["name"] == "/smoke"
    [again] = results(env, report)
    assert again["changed"] is False

    finish = playbook(tmp_path, [recipe_task(recipe_id=recipe["id"], status="completed", result="pass")],
                      "finish.yml")
    [would] = results(env, finish, "--check")
    assert would["changed"] and server.alice.get(f"/recipes/{recipe['id']}").json()["status"] == "running"
    [finished] = results(env, finish)
    assert finished["changed"] and finished["recipe"]["status"] == "completed"
    shown = server.alice.get(f"/recipes/{recipe['id']}").json()
    assert shown["status"] == "completed" and shown["result"] == "pass"
    reservation = server.admin.get(f"/reservations/{recipe['reservation']}").json()
    assert reservation["state"] != "active"
    [again] = results(env, finish)
    assert again["changed"] is False

    cancel = playbook(tmp_path, [{"name": "cancel", "lablease.lab.job": {"job_id": job["job_id"], "state": "absent"}}],
                      "cancel.yml")
    [nothing] = results(env, cancel)
    assert nothing["changed"] is False

    # a job no system could ever run is refused at once: nothing is submitted
    impossible = ('<job><whiteboard>impossible</whiteboard><recipeSet><recipe><hostRequires>'
                  '<arch op="=" value="s390x"/></hostRequires></recipe></recipeSet></job>')
    [refused] = results(env, playbook(tmp_path, [{"name": "impossible", "lablease.lab.job": {"xml": impossible}}],
                                      "impossible.yml"))
    assert refused["failed"] and not refused["changed"] and "can never start" in refused["msg"], refused
    # a job whose only system is held: waiting times out, saying why; cancelling it is a change once
    held = server.admin.post("/reservations", json={"system": "a3.lab.test", "duration": "1h"})
    assert held.status_code == 201, held.text
    xml = ('<job><whiteboard>never</whiteboard><recipeSet><recipe><hostRequires>'
           '<hostname op="=" value="a3.lab.test"/></hostRequires></recipe></recipeSet></job>')
    never = playbook(tmp_path, [{"name": "never", "lablease.lab.job": {"xml": xml, "wait": True, "wait_timeout": 3,
                                                                       "wait_sleep": 1}}], "never.yml")
    [timeout] = results(env, never)
    assert timeout["failed"] and timeout["changed"] and "not running after 3 s" in timeout["msg"], timeout["msg"]
    stuck = timeout["job_id"]
    assert server.alice.get(f"/jobs/{stuck}").json()["whiteboard"] == "never"
    cancel = playbook(tmp_path, [{"name": "cancel", "lablease.lab.job": {"job_id": stuck, "state": "absent"}}],
                      "cancel2.yml")
    [would] = results(env, cancel, "--check")
    assert would["changed"] and server.alice.get(f"/jobs/{stuck}").json()["recipe_sets"][0]["recipes"][0][
        "status"] not in ("cancelled",)
    [cancelled] = results(env, cancel)
    assert cancelled["changed"]
    assert server.alice.get(f"/jobs/{stuck}").json()["recipe_sets"][0]["recipes"][0]["status"] == "cancelled"
    [again] = results(env, cancel)
    assert again["changed"] is False

    xml_file = tmp_path / "job.xml"
    xml_file.write_text(xml.replace("never", "from a file"))
    from_file = playbook(tmp_path, [{"name": "file", "lablease.lab.job": {"xml_file": str(xml_file)},
                                     "register": "submitted"},
                                    {"name": "cancel", "lablease.lab.job": {"job_id": "{{ submitted.job_id }}",
                                                                            "state": "absent"}}], "file.yml")
    made, gone = results(env, from_file)
    assert made["changed"] and made["job"]["whiteboard"] == "from a file" and gone["changed"]
    assert server.alice.get(f"/jobs/{made['job_id']}").json()["recipe_sets"][0]["recipes"][0]["status"] == "cancelled"
    assert server.admin.delete(f"/reservations/{held.json()['id']}").status_code == 204


def examples_play(server, tmp_path, module, user):
    play = {"module_defaults": {"group/lablease.lab.api": {"url": server.url, "token": server.tokens[user]}}}
    path = playbook(tmp_path, examples(module), f"{module}-run.yml", **play)
    return run(ansible_env(server, user=user), "ansible-playbook", str(path), check=True).stdout


def test_new_modules_examples_run(server, tmp_path):
    # loan, as the administrator: lend s2 to bob, extend, take back
    examples_play(server, tmp_path, "loan", "admin")
    assert loan_of(server, "s2.lab.test") is None
    history = server.admin.get("/systems/s2.lab.test/loans").json()
    assert history[0]["recipient"] == "bob" and history[0]["end"].startswith("2030-12-31")

    # group gpu-team, owned by alice; pool and access policy (which name the group) as the administrator
    server.alice.post("/groups", json={"name": "gpu-team"}).raise_for_status()
    examples_play(server, tmp_path, "pool", "admin")
    assert server.admin.get("/pools/gpus").status_code == 404
    examples_play(server, tmp_path, "access_policy", "admin")
    rules = server.admin.get("/systems/s1.lab.test/access-policy").json()["rules"]
    assert {(r["permission"], r["everybody"]) for r in rules} >= {("view", True), ("reserve", True)}
    examples_play(server, tmp_path, "group", "alice")
    assert server.admin.get("/groups/gpu-team").status_code == 404

    # job and recipe, as alice, on the automated systems (the job's example prefers pool gpus)
    server.admin.post("/pools", json={"name": "gpus"}).raise_for_status()
    examples_play(server, tmp_path, "job", "alice")
    examples_play(server, tmp_path, "recipe", "alice")
    jobs = server.alice.get("/jobs").json()
    unfinished = [r for j in jobs for rs in j["recipe_sets"] for r in rs["recipes"]
                  if r["status"] not in ("completed", "cancelled", "aborted")]
    assert unfinished == []
    assert any(r["status"] == "completed" and r["result"] == "pass"
               for j in jobs for rs in j["recipe_sets"] for r in rs["recipes"])


def lease_play(tmp_path, name, tasks_file, **role_vars):
    return playbook(tmp_path, [{"name": "lease", "ansible.builtin.include_role": {"name": "lablease.lab.lease"},
                                "vars": {"lease_requires": {"field": "arch", "op": "=", "value": "x86_64"},
                                         "lease_duration": "1h", "lease_wait_timeout": 60,
                                         "lease_tasks": str(tasks_file), **role_vars}}], name)


def test_lease_role_by_host_requirements(server, tmp_path):
    passing = tmp_path / "pass.yml"
    passing.write_text("- name: Work on the system\n  ansible.builtin.debug:\n    msg: \"working on {{ lease_host }}\"\n")
    failing = tmp_path / "fail.yml"
    failing.write_text("- name: Fail\n  ansible.builtin.fail:\n    msg: broken on purpose\n")
    env = ansible_env(server, user="bob")

    proc = run(env, "ansible-playbook", str(lease_play(tmp_path, "pass-play.yml", passing)), check=True)
    assert "working on a" in proc.stdout
    [job] = server.bob.get("/jobs").json()
    [recipe] = job["recipe_sets"][0]["recipes"]
    assert recipe["status"] == "completed" and recipe["result"] == "pass" and recipe["system"] in AUTOMATED
    held = server.admin.get("/reservations", params={"user": "bob", "active": "true"}).json()
    assert held == []

    proc = run(env, "ansible-playbook", str(lease_play(tmp_path, "keep-play.yml", failing, lease_keep_on_failure=True,
                                                       lease_keep_hours=2)))
    assert proc.returncode != 0 and "failed: broken on purpose" in proc.stdout and "is kept for you" in proc.stdout
    job = server.bob.get("/jobs").json()[0]
    [recipe] = job["recipe_sets"][0]["recipes"]
    assert recipe["status"] == "completed" and recipe["result"] == "fail"
    [kept] = server.admin.get("/reservations", params={"user": "bob", "active": "true"}).json()
    assert kept["system"] == recipe["system"] and 6600 < kept["seconds_left"] <= 7200
    server.bob.delete(f"/reservations/{kept['id']}").raise_for_status()

    proc = run(env, "ansible-playbook", str(lease_play(tmp_path, "fail-play.yml", failing)))
    assert proc.returncode != 0 and "failed: broken on purpose" in proc.stdout
    assert server.admin.get("/reservations", params={"user": "bob", "active": "true"}).json() == []

    # nothing could ever match: the server refuses the job at once, the role says so and leaves no job behind
    jobs_before = len(server.bob.get("/jobs").json())
    nothing = lease_play(tmp_path, "none-play.yml", passing, lease_wait_timeout=2,
                         lease_requires={"field": "arch", "op": "=", "value": "s390x"})
    proc = run(env, "ansible-playbook", str(nothing))
    assert proc.returncode != 0 and "can never start" in proc.stdout
    assert "leasing a system for {" in proc.stdout and "s390x" in proc.stdout
    assert len(server.bob.get("/jobs").json()) == jobs_before

    both = lease_play(tmp_path, "both-play.yml", passing, lease_system="s1.lab.test")
    proc = run(env, "ansible-playbook", str(both))
    assert proc.returncode != 0 and "not both" in proc.stdout
