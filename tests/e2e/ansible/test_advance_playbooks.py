"""advance_reservation and advance_reservation_info end to end: real `ansible-playbook` runs against a real
`lablease-server serve`.

One server for the whole module (max_advance_reservations: 4). alice is in `arusers`, bob is not. Every
claim is checked over the API, as a user would. After each test every active advance reservation (AR) is
deleted (with force), so the tests do not depend on each other's ARs.
"""
from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest

from tests.e2e.ansible.test_playbooks import ansible_env, examples, playbook, run
from tests.e2e.ansible.test_provisioning_playbooks import outcomes, recorded
from tests.support.live import LiveServer

LIMIT = 4
# fqdn -> (condition, memory_mb, pool)
SYSTEMS = {
    "m1.lab.test": ("automated", 4096, "perf"),
    "m2.lab.test": ("automated", 8192, "perf"),
    "m3.lab.test": ("automated", 16384, "perf"),
    "m4.lab.test": ("automated", 32768, "perf"),
    "b1.lab.test": ("manual", 2048, "lab2"),  # bob holds these in the not-grantable test
    "b2.lab.test": ("manual", 2048, "lab2"),
    "x1.lab.test": ("automated", 1024, None),  # breaks in the info test
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    live = LiveServer(tmp_path_factory.mktemp("server") / "data", workers=1, threads=4,
                      settings={"max_advance_reservations": LIMIT, "ar_duration_offset": "1m"}).start()
    try:
        live.alice, live.bob = live.add_users("alice", "bob")
        ok(live.admin.post("/groups/arusers/members", json={"user": "alice"}))
        ok(live.admin.post("/groups", json={"name": "qe", "members": ["bob"]}))
        for pool in ("perf", "lab2"):
            ok(live.admin.post("/pools", json={"name": pool}))
        for fqdn, (condition, memory, pool) in SYSTEMS.items():
            ok(live.admin.post("/systems", json={"fqdn": fqdn, "arch": "x86_64", "condition": condition,
                                                 "memory_mb": memory}))
            if pool:
                ok(live.admin.post(f"/pools/{pool}/systems", json={"fqdn": fqdn}))
        deadline = time.monotonic() + 20
        while any(live.admin.get(path).status_code != 200 for path in ("/advance-reservations", "/systems")):
            assert time.monotonic() < deadline, "the server kept answering errors after start; see its log"
            time.sleep(0.1)
        yield live
    finally:
        live.stop()


@pytest.fixture(autouse=True)
def clean(server):
    """After each test: no active AR is left (deleted with force), and no reservation."""
    yield
    for ar in ok(server.admin.get("/advance-reservations", params={"user": "*"})).json():
        if ar["state"] in ("w", "r", "E"):
            answer = server.admin.delete(f"/advance-reservations/{ar['id']}", params={"force": "true"})
            assert answer.status_code == 204, answer.text
    for reservation in ok(server.admin.get("/reservations", params={"active": "true"})).json():
        assert server.admin.delete(f"/reservations/{reservation['id']}").status_code == 204


def ok(answer):
    assert answer.status_code < 300, (answer.status_code, answer.text)
    return answer


def utc(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def hours_ahead(hours: float) -> datetime:
    """A start this many hours ahead, on the minute."""
    return (datetime.now(timezone.utc) + timedelta(hours=hours)).replace(second=0, microsecond=0)


def when(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


def ar_task(title="ar", **args) -> dict:
    return {"name": title, "lablease.lab.advance_reservation": args}


def info_task(title="info", **args) -> dict:
    return {"name": title, "lablease.lab.advance_reservation_info": args}


def ars(server, api=None, user="*") -> list[dict]:
    return ok((api or server.admin).get("/advance-reservations", params={"user": user})).json()


def active(listing: list[dict]) -> list[dict]:
    return [ar for ar in listing if ar["state"] in ("w", "r", "E")]


def named(server, name) -> list[dict]:
    return [ar for ar in ars(server) if ar["name"] == name]


def get(server, ar) -> dict:
    return ok(server.admin.get(f"/advance-reservations/{ar['id']}")).json()


def create(api, **body) -> dict:
    answer = api.post("/advance-reservations", json=body)
    assert answer.status_code == 201, answer.text
    return answer.json()


def without(ar: dict, *keys) -> dict:
    return {k: v for k, v in ar.items() if k not in keys}


# --- 1. create: check mode, real, re-runs -----------------------------------------------------------

def test_create_check_mode_then_real_then_idempotent_reruns(server, tmp_path):
    alice = ansible_env(server, user="alice")
    start = hours_ahead(24)
    task = ar_task("create", name="build", start=utc(start), duration="2h", pools=["perf"], count=2,
                   acl=["alice", "bob"])
    create_play = playbook(tmp_path, [task], "create.yml")

    # check mode (with --diff): the server validates only; the systems it would grant are shown, nothing is made
    proc, [(_, status, checked)] = recorded(alice, create_play, "--check", "--diff")
    assert status == "ok" and checked["changed"] is True, checked
    would = checked["advance_reservation"]
    assert would["id"] is None and would["systems"] == ["m1.lab.test", "m2.lab.test"]  # the smallest two
    assert (would["start"], would["end"], would["owner"]) == (utc(start), utc(start + timedelta(hours=2)), "alice")
    assert '+        "m1.lab.test",' in proc.stdout and '+        "m2.lab.test"' in proc.stdout
    assert named(server, "build") == []

    # for real: granted
    [made] = outcomes(alice, create_play)
    assert made["changed"] is True and not made["failed"]
    [ar] = named(server, "build")
    assert ar["id"] == made["advance_reservation"]["id"]
    assert ar["owner"] == "alice" and ar["state"] == "w" and ar["systems"] == ["m1.lab.test", "m2.lab.test"]
    assert (ar["start"], ar["end"], ar["duration"]) == (utc(start), utc(start + timedelta(hours=2)), 7200)
    assert ar["pools"] == ["perf"] and ar["count"] == 2 and sorted(ar["acl"]) == ["alice", "bob"]

    # the same task again; name + duration only; end instead of duration; the ACL reordered (and without the
    # owner): not changed, nothing written
    reruns = playbook(tmp_path, [
        task,
        ar_task("duration only", name="build", duration="2h"),
        ar_task("end only", name="build", end=ar["end"]),
        ar_task("acl reordered", name="build", acl=["bob", "alice"]),
        ar_task("acl without the owner", name="build", acl=["bob"]),
    ], "reruns.yml")
    results = outcomes(alice, reruns)
    assert [(r["changed"], r["failed"]) for r in results] == [(False, False)] * 5, results
    assert all(r["advance_reservation"]["id"] == ar["id"] for r in results)
    assert named(server, "build") == [ar]


def test_check_mode_predicts_the_window_and_state_the_server_grants(server, tmp_path):
    """end + duration without a start begins at end - duration; no start begins now, running at once."""
    alice = ansible_env(server, user="alice")
    end = hours_ahead(30)
    steps = playbook(tmp_path, [ar_task("end and duration", name="ed", end=utc(end), duration="2h", count=1),
                                ar_task("duration only", name="now", duration="1h", count=1)], "predict.yml")
    second = timedelta(seconds=1)  # times are answered to the second
    checking = datetime.now(timezone.utc) - second
    predicted = [r["advance_reservation"] for r in outcomes(alice, steps, "--check")]
    assert named(server, "ed") == named(server, "now") == []
    running = datetime.now(timezone.utc)
    granted = [r["advance_reservation"] for r in outcomes(alice, steps)]
    done = datetime.now(timezone.utc) + second
    assert [named(server, "ed"), named(server, "now")] == [[g] for g in granted]
    for would, ar in zip(predicted, granted):
        assert (would["state"], would["end"] if ar["name"] == "ed" else would["duration"], would["systems"]) == (
            ar["state"], ar["end"] if ar["name"] == "ed" else ar["duration"], ar["systems"]), (would, ar)
    # no start: each begins when it is asked for, the check's during the check run, the grant's during the real one
    assert checking <= when(predicted[1]["start"]) <= running + second, (predicted[1], checking, running)
    assert running - second <= when(granted[1]["start"]) <= done, (granted[1], running, done)
    assert (granted[0]["start"], granted[0]["duration"], granted[0]["state"]) == (
        utc(end - timedelta(hours=2)), 7200, "w")
    assert predicted[0]["start"] == granted[0]["start"] and predicted[0]["duration"] == 7200
    assert granted[1]["state"] == predicted[1]["state"] == "r"


# --- 2. qralter: acl, duration, mail_to one at a time ------------------------------------------------

def test_change_acl_then_duration_then_mail_to(server, tmp_path):
    alice = ansible_env(server, user="alice")
    start = hours_ahead(48)
    ar = create(server.alice, name="alter", start=utc(start), duration="2h", pools=["perf"], count=1)
    assert ar["acl"] == ["alice"] and ar["systems"] == ["m1.lab.test"]

    def change(filename, **args):
        """Run the change and the same again with --diff: (stdout, the AR before, the AR after)."""
        before = get(server, ar)
        steps = playbook(tmp_path, [ar_task("change", name="alter", **args), ar_task("again", name="alter", **args)],
                         filename)
        proc, entries = recorded(alice, steps, "--diff")
        (_, first_status, first), (_, again_status, again) = entries
        assert (first_status, first["changed"]) == ("ok", True), first
        assert (again_status, again["changed"]) == ("ok", False), again
        after = get(server, ar)
        assert first["advance_reservation"] == after == again["advance_reservation"]
        assert proc.stdout.count("changed: [localhost]") == 1, proc.stdout
        return proc.stdout, before, after

    # acl: PATCH {"acl": [...]}; only the ACL changed
    out, before, after = change("acl.yml", acl=["alice", "bob"])
    assert '+        "bob"' in out and '-        "alice"\n+        "alice",' in out
    assert sorted(after["acl"]) == ["alice", "bob"] and without(after, "acl") == without(before, "acl")

    # duration, counted from the AR's start: PATCH {"duration": 10800}; the end moved, nothing else
    out, before, after = change("duration.yml", duration="3h")
    new_end = utc(start + timedelta(hours=3))
    assert '-    "duration": 7200,' in out and '+    "duration": 10800,' in out
    assert f'-    "end": "{before["end"]}",' in out and f'+    "end": "{new_end}",' in out
    assert (after["end"], after["duration"]) == (new_end, 10800)
    assert without(after, "end", "duration") == without(before, "end", "duration")

    # mail_to: PATCH {"mail": {...}}, the events left as they are
    out, before, after = change("mail.yml", mail_to=["ops@example.com"])
    assert '+            "ops@example.com"' in out
    assert after["mail"] == {"events": before["mail"]["events"], "to": ["ops@example.com"]}
    assert without(after, "mail") == without(before, "mail")


# --- 3. what cannot change ---------------------------------------------------------------------------

def test_a_field_that_cannot_change_fails_and_writes_nothing(server, tmp_path):
    alice = ansible_env(server, user="alice")
    ar = create(server.alice, name="fixed", start=utc(hours_ahead(72)), duration="2h", pools=["perf"], count=2)
    # a count that differs, with an ACL change that alone would be allowed: nothing of it is sent
    steps = playbook(tmp_path, [ar_task(name="fixed", count=3, acl=["alice", "bob"])], "count.yml")
    for options in (("--check",), ()):
        [failed] = outcomes(alice, steps, *options)
        assert failed["failed"] and not failed["changed"], (options, failed)
        assert failed["msg"] == (
            f"advance reservation fixed (id {ar['id']}) cannot change count once granted: count is 2, the task asks "
            "for 3; delete it (state=absent) and create it again"), options
        assert get(server, ar) == ar and named(server, "fixed") == [ar]


# --- 4. who may, and how many --------------------------------------------------------------------------

def test_not_in_arusers_and_the_limit(server, tmp_path):
    task = ar_task(name="mine", duration="1h", count=1)
    steps = playbook(tmp_path, [task], "refused.yml")

    bob = ansible_env(server, user="bob")
    for options in (("--check",), ()):
        [refused] = outcomes(bob, steps, *options)
        assert refused["failed"] and refused["status"] == 403, (options, refused)
        assert refused["msg"] == ("not allowed: only administrators and members of the arusers group may create "
                                  "advance reservations"), options
    assert named(server, "mine") == []

    # fill the server up to its limit (far in the future, one system each), then alice is refused
    assert active(ars(server)) == []
    fillers = [create(server.admin, name=f"filler{i}", start=utc(hours_ahead(24 * 30)), duration="1h")
               for i in range(LIMIT)]
    alice = ansible_env(server, user="alice")
    for options in (("--check",), ()):
        [limited] = outcomes(alice, steps, *options)
        assert limited["failed"] and limited["status"] == 429, (options, limited)
        assert limited["msg"] == (f"advance reservation mine refused: {LIMIT} advance reservations are active, the "
                                  f"limit (max_advance_reservations) is {LIMIT}"), options
    assert named(server, "mine") == [] and active(ars(server)) == [get(server, f) for f in fillers]


# --- 5. not grantable ------------------------------------------------------------------------------------

def test_not_grantable_names_the_busy_systems(server, tmp_path):
    held = [ok(server.bob.post("/reservations", json={"system": fqdn, "duration": "3h"})).json()
            for fqdn in ("b1.lab.test", "b2.lab.test")]
    others = len(SYSTEMS) - 2
    steps = playbook(tmp_path, [ar_task(name="wide", pools=["lab2"], count=1, duration="1h")], "busy.yml")
    busy = ", ".join(f"{r['system']} from {r['start']} until {r['end']}" for r in held)
    for options in (("--check",), ()):
        [refused] = outcomes(ansible_env(server, user="alice"), steps, *options)
        assert refused["failed"] and refused["status"] == 409 and not refused["changed"], (options, refused)
        assert refused["msg"] == (
            "advance reservation wide cannot be granted: 1 system(s) asked for, 0 eligible and free; ruled out: "
            f"2 booked during the window; {others} not in the pools asked for (busy: {busy})"), options
        assert [b["system"] for b in refused["problem"]["reasons"]["busy"]] == ["b1.lab.test", "b2.lab.test"]
    assert named(server, "wide") == []


# --- 6. absent with bound work; force; present again ---------------------------------------------------

def test_absent_with_bound_work_needs_force(server, tmp_path):
    alice = ansible_env(server, user="alice")
    start = utc(hours_ahead(24))
    ar = create(server.alice, name="bound", start=start, duration="2h", pools=["perf"], count=1)
    job = ok(server.alice.post("/jobs", json={"recipe_sets": [{"ar": ar["id"], "recipes": [{"runtime_limit": 600}]}]}))
    [recipe] = job.json()["recipe_sets"][0]["recipes"]
    assert recipe["status"] == "queued"

    absent = ar_task("absent", name="bound", state="absent")
    [refused] = outcomes(alice, playbook(tmp_path, [absent], "absent.yml"))
    assert refused["failed"] and refused["status"] == 409 and not refused["changed"], refused
    assert refused["msg"] == (f"advance reservation bound (id {ar['id']}): advance reservation {ar['id']} has bound "
                              f"work (recipe {recipe['id']}); delete with force=true to abort it first")
    assert get(server, ar) == ar
    assert ok(server.alice.get(f"/recipes/{recipe['id']}")).json()["status"] == "queued"

    forced = ar_task("absent", name="bound", state="absent", force=True)
    steps = playbook(tmp_path, [forced, dict(forced, name="again"),
                                ar_task("present", name="bound", start=start, duration="2h", pools=["perf"], count=1)],
                     "force.yml")
    deleted, again, fresh = outcomes(alice, steps)
    assert (deleted["changed"], deleted["deleted"], deleted["advance_reservation"]) == (True, [ar["id"]], None)
    assert (again["changed"], again["deleted"]) == (False, [])
    assert fresh["changed"] is True and not fresh["failed"]
    assert get(server, ar)["state"] == "d"
    assert ok(server.alice.get(f"/recipes/{recipe['id']}")).json()["status"] == "aborted"
    old, new = named(server, "bound")
    assert old["id"] == ar["id"] and new["id"] == fresh["advance_reservation"]["id"] != ar["id"]
    assert new["state"] == "w" and new["start"] == start and new["systems"] == ar["systems"]  # released, taken again


# --- 7. advance_reservation_info -------------------------------------------------------------------------

def test_info(server, tmp_path):
    start = utc(hours_ahead(24))
    mine = create(server.alice, name="mine", start=start, duration="1h", hosts=["x1.lab.test"])
    shared = create(server.admin, name="shared", start=start, duration="1h", pools=["perf"], acl=["admin", "alice"])
    private = create(server.admin, name="private", start=start, duration="1h", pools=["perf"])
    ok(server.admin.patch("/systems/x1.lab.test", json={"condition": "broken"}))
    try:
        deadline = time.monotonic() + 15
        while get(server, mine)["state"] != "E":
            assert time.monotonic() < deadline, get(server, mine)
            time.sleep(0.2)
        steps = playbook(tmp_path, [
            info_task("mine"),
            info_task("everybody's", user="*"),
            info_task("in error", user="*", state=["E"]),
            info_task("unknown id", id=999999),
            info_task("not visible", id=private["id"]),
            info_task("by name", name="mine", state=["w", "r", "E"]),
        ], "info.yml")
        results = outcomes(ansible_env(server, user="alice"), steps)
        assert not any(r["failed"] or r["changed"] for r in results), results
        own, everybody, broken, unknown, invisible, by_name = [r["advance_reservations"] for r in results]
        errored = get(server, mine)
        assert own == ars(server, server.alice, user=None) and active(own) == [errored]
        assert {a["owner"] for a in own} == {"alice"}
        # everybody's that alice may see: hers, and the administrator's that has her in its ACL
        assert everybody == ars(server, server.alice) and [a["id"] for a in active(everybody)] == [
            mine["id"], shared["id"]]
        assert private["id"] not in [a["id"] for a in everybody]
        assert broken == by_name == [errored]
        assert errored["state"] == "E" and errored["error_reasons"] == ["x1.lab.test is broken"]
        assert unknown == [] and invisible == []
    finally:
        ok(server.admin.patch("/systems/x1.lab.test", json={"condition": "automated"}))


# --- 8. both modules' EXAMPLES through module_defaults ---------------------------------------------------

def run_with_defaults(server, tmp_path, tasks, user, filename) -> str:
    """Run tasks as one play, the connection set only through the action group (no LABLEASE_URL/TOKEN)."""
    path = playbook(tmp_path, tasks, filename, module_defaults={
        "group/lablease.lab.api": {"url": server.url, "token": server.tokens[user]}})
    return run(ansible_env(server, user=None, LABLEASE_URL=""), "ansible-playbook", str(path), check=True).stdout


def test_examples(server, tmp_path):
    # the info examples, with an AR of alice's to show
    listed = create(server.alice, name="nightly-perf", start=utc(hours_ahead(24 * 5)), duration="1h", pools=["perf"])
    out = run_with_defaults(server, tmp_path, examples("advance_reservation_info"), "alice", "info-examples.yml")
    assert f"{listed['id']} nightly-perf w {listed['start']} - {listed['end']}: m1.lab.test" in out
    ok(server.alice.delete(f"/advance-reservations/{listed['id']}"))

    # the module's examples: create (two x86_64 systems of >= 8 GiB from perf), show, extend and add bob, delete
    tasks = examples("advance_reservation")
    create_args = tasks[0]["lablease.lab.advance_reservation"]
    start = when(create_args["start"])
    while start < datetime.now(timezone.utc) + timedelta(minutes=10):
        # a start that has passed, or nearly (should the example ever say so): the same time on a later day
        start += timedelta(days=1)
        create_args["start"] = utc(start)
    out = run_with_defaults(server, tmp_path, tasks, "alice", "examples.yml")
    first, done = named(server, "nightly-perf")
    assert first["id"] == listed["id"] and first["state"] == "d"
    assert f"AR {done['id']}: m2.lab.test, m3.lab.test" in out
    assert done["state"] == "d" and done["owner"] == "alice" and done["systems"] == ["m2.lab.test"]
    assert [gone["system"] for gone in done["released"]] == ["m3.lab.test"]  # the release example
    assert (done["start"], done["end"], done["duration"]) == (utc(start), utc(start + timedelta(hours=10)), 36000)
    assert sorted(done["acl"]) == ["@qe", "alice", "bob"] and done["requires"] == create_args["requires"]
    assert done["mail"] == {"events": "bea", "to": ["perf-team@example.com"]}
    assert (done["account"], done["error_handling"], done["count"], done["pools"]) == ("perf-team", "hard", 2, ["perf"])
