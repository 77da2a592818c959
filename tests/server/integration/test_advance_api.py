"""Advance reservations over the API: granting, limits, states on time, errors, protection, bound work."""
from datetime import timedelta

import pytest

from lablease.domain.paging import PageRequest
from lablease.config import Settings
from lablease.services.people import users
from lablease.store.tables import Activity, Outbox
from lablease.store.uow import UnitOfWork
from lablease.worker.loop import run_due

from .conftest import START, Lab, at

H = timedelta(hours=1)


@pytest.fixture
def lab(db, tmp_path):
    lab = Lab(db, Settings(data_dir=str(tmp_path / "data"), max_advance_reservations=3, ar_duration_offset="1m"))
    with UnitOfWork(db) as uow:
        users.ensure_arusers(uow, START)
        uow.commit()
    lab.admin.post("/groups/arusers/members", {"user": "alice"})
    for name in ("a1", "a2", "a3"):
        lab.system(f"{name}.lab.test", condition="automated", memory_mb=4096)
    lab.system("big.lab.test", condition="automated", memory_mb=65536)
    return lab


def ar(lab, caller=None, **body):
    body = {"start": at(START + H), "duration": "2h", "count": 2, **body}
    return (caller or lab.alice).post("/advance-reservations", body)


def run(lab, moment):
    run_due(lab.db, moment, lab.settings)
    lab.clock.now = moment


def test_granting_books_the_smallest_suitable_systems_for_the_window(lab):
    status, granted = ar(lab, name="perf", requires={"field": "memory", "op": ">=", "value": 2048})
    assert status == 201, granted
    assert granted["state"] == "w" and granted["owner"] == "alice" and granted["acl"] == ["alice"]
    assert granted["systems"] == ["a1.lab.test", "a2.lab.test"] and granted["duration"] == 7200
    assert (granted["start"], granted["end"]) == (at(START + H), at(START + 3 * H))
    # the calendar holds them: a manual reservation overlapping the window is refused
    status, problem = lab.admin.post("/reservations", {"system": "a1.lab.test", "start": at(START + 2 * H),
                                                       "duration": "1h"})
    assert status == 409
    _, system = lab.admin.get("/systems/a1.lab.test")
    assert [(h["id"], h["state"]) for h in system["advance_reservations"]] == [(granted["id"], "w")]
    # by name too
    assert lab.alice.get("/advance-reservations/perf")[1]["id"] == granted["id"]


def test_who_may_create_and_the_limit(lab):
    status, problem = ar(lab, caller=lab.bob)
    assert status == 403 and "arusers" in problem["detail"]
    for _ in range(3):
        assert ar(lab, count=1)[0] == 201
    status, problem = ar(lab, count=1)
    assert status == 429 and "max_advance_reservations" in problem["detail"]


def test_a_window_needs_two_of_start_end_duration_that_agree(lab):
    status, problem = lab.alice.post("/advance-reservations", {"start": at(START + H), "count": 1})
    assert status == 422
    status, problem = lab.alice.post("/advance-reservations", {"start": at(START + H), "end": at(START + 2 * H),
                                                               "duration": "3h", "count": 1})
    assert status == 422 and "duration" in problem["detail"]


def test_a_refusal_says_why_and_validate_only_creates_nothing(lab):
    lab.admin.post("/reservations", {"system": "a1.lab.test", "start": at(START + H), "duration": "30m"})
    status, problem = ar(lab, count=4)
    assert status == 409 and problem["reasons"]["ruled_out"] == {"booked during the window": 1}
    assert [b["system"] for b in problem["reasons"]["busy"]] == ["a1.lab.test"]
    status, answer = ar(lab, count=3, validate_only=True)
    assert status == 200 and answer == {"grantable": True, "systems": ["a2.lab.test", "a3.lab.test", "big.lab.test"]}
    assert lab.alice.get("/advance-reservations")[1] == []


def test_states_change_on_time_and_the_end_frees_the_systems(lab):
    _, granted = ar(lab, mail={"events": "be"})
    run(lab, START + H)
    assert lab.alice.get(f"/advance-reservations/{granted['id']}")[1]["state"] == "r"
    run(lab, START + 3 * H)
    assert lab.alice.get(f"/advance-reservations/{granted['id']}")[1]["state"] == "x"
    _, history = lab.admin.get("/systems/a1.lab.test")
    assert history["advance_reservations"] == []
    with UnitOfWork(lab.db, write=False) as uow:
        events = [row.payload["event"] for row in uow.session.query(Outbox)]
    assert events == []  # alice has no mail address or webhook: nothing to deliver to


def test_a_window_that_passed_while_the_worker_was_stopped_starts_and_exits(lab):
    """The worker first runs after the whole window (it was stopped): the AR does not stay waiting with a
    failing step; it goes through running to exited, as the clock would have taken it, and frees its systems."""
    _, granted = ar(lab)
    run(lab, START + 5 * H)
    shown = lab.alice.get(f"/advance-reservations/{granted['id']}")[1]
    assert shown["state"] == "x", shown
    assert lab.admin.get("/systems/a1.lab.test")[1]["advance_reservations"] == []
    with UnitOfWork(lab.db, write=False) as uow:
        changes = [row.new for row in uow.session.query(Activity).filter_by(
            object_type="advance_reservation", object_id=str(granted["id"]), action="state_changed"
        ).order_by(Activity.id)]
    assert changes == ["r (its start was reached)", "x (its end was reached)"]


def test_a_broken_system_puts_it_in_error_until_it_is_repaired(lab):
    _, granted = ar(lab, error_handling="hard")
    lab.admin.patch("/systems/a1.lab.test", {"condition": "broken"})
    _, shown = lab.alice.get(f"/advance-reservations/{granted['id']}", explain="true")
    assert shown["state"] == "E" and shown["error_reasons"] == ["a1.lab.test is broken"]
    assert "hard error handling" in shown["explain"][-1]
    lab.admin.patch("/systems/a1.lab.test", {"condition": "automated"})
    assert lab.alice.get(f"/advance-reservations/{granted['id']}")[1]["state"] == "w"


def test_bound_jobs_run_only_inside_on_its_systems(lab):
    lab.admin.post("/groups", {"name": "qe"})
    lab.admin.post("/groups/qe/members", {"user": "bob"})
    _, granted = ar(lab, acl=["alice", "@qe"])
    job = {"recipe_sets": [{"ar": granted["id"], "recipes": [{"runtime_limit": 1800}]}]}
    status, problem = lab.admin.post("/jobs", {"recipe_sets": [{"ar": granted["id"], "recipes": [{}]}]})
    assert status == 422 and "runtime limit" in problem["detail"]
    status, problem = lab.bob.post("/jobs", {"recipe_sets": [{"ar": granted["id"], "recipes": [{"runtime_limit": 9000}]}]})
    assert status == 422 and "runtime" in problem["detail"]
    status, submitted = lab.bob.post("/jobs", job)
    assert status == 201, submitted
    recipe = submitted["recipe_sets"][0]["recipes"][0]
    assert recipe["status"] == "queued"  # not before the AR starts, although systems are idle
    run(lab, START + H)
    _, placed = lab.bob.get(f"/recipes/{recipe['id']}")
    assert placed["status"] == "running" and placed["system"] in granted["systems"]
    # work outside the AR with no runtime limit does not land on its systems
    _, other = lab.bob.post("/jobs", {"recipe_sets": [{"recipes": [{}]}]})
    assert other["recipe_sets"][0]["recipes"][0]["system"] not in granted["systems"]
    # the AR's end aborts what is still running
    run(lab, START + 3 * H)
    assert lab.bob.get(f"/recipes/{recipe['id']}")[1]["status"] == "aborted"


def test_acl_users_reserve_its_systems_by_hand_inside_the_window(lab):
    _, granted = ar(lab)
    status, problem = lab.bob.post("/reservations", {"system": "a1.lab.test", "start": at(START + H),
                                                     "advance_reservation": granted["id"]})
    # outside its ACL, bob is told why he cannot use it
    assert (status, problem["detail"]) == (403, f"you are not in the ACL of advance reservation {granted['id']}")
    status, inside = lab.alice.post("/reservations", {"system": "a1.lab.test", "start": at(START + H),
                                                      "advance_reservation": granted["id"]})
    assert status == 201, inside
    assert inside["end"] == granted["end"] and inside["advance_reservation"] == granted["id"]
    status, _ = lab.alice.post("/reservations", {"system": "a1.lab.test", "start": at(START + H),
                                                 "duration": "30m", "advance_reservation": granted["id"]})
    assert status == 409  # the AR's own calendar for a1 is taken
    status, problem = lab.alice.delete(f"/advance-reservations/{granted['id']}")
    assert status == 409 and "bound work" in problem["detail"]
    assert lab.alice.delete(f"/advance-reservations/{granted['id']}", force="true")[0] == 204
    assert lab.alice.get(f"/reservations/{inside['id']}")[1]["state"] != "active"
    assert lab.admin.post("/reservations", {"system": "a1.lab.test", "start": at(START + 2 * H),
                                            "duration": "1h"})[0] == 201


def test_qralter_moves_the_end_against_the_calendar_and_accounting_adds_up(lab):
    _, granted = ar(lab, count=1, hosts=["a3.lab.test"])
    lab.admin.post("/reservations", {"system": "a3.lab.test", "start": at(START + 4 * H), "duration": "1h"})
    status, problem = lab.alice.patch(f"/advance-reservations/{granted['id']}", {"end": at(START + 5 * H)})
    assert status == 409
    status, problem = lab.alice.patch(f"/advance-reservations/{granted['id']}", {"end": "soon"})
    assert status == 422 and "end" in problem["detail"]
    status, changed = lab.alice.patch(f"/advance-reservations/{granted['id']}", {"duration": "3h"})
    assert status == 200 and changed["end"] == at(START + 4 * H)
    run(lab, START + H)
    lab.alice.post("/reservations", {"system": "a3.lab.test", "start": at(START + H), "duration": "30m",
                                     "advance_reservation": granted["id"]})
    lab.clock.now = START + 2 * H
    _, account = lab.alice.get(f"/advance-reservations/{granted['id']}/accounting")
    assert account["reserved_seconds"] == 3600 and account["used_seconds"] == 1800
    assert account["reservations"][0]["seconds"] == 1800


def test_changes_that_would_break_a_granted_reservation_are_refused_unless_forced(lab):
    lab.admin.post("/pools", {"name": "fast"})
    for fqdn in ("a1.lab.test", "a2.lab.test"):
        lab.admin.post("/pools/fast/systems", {"fqdn": fqdn})
    _, granted = ar(lab, pools=["fast"])
    assert granted["systems"] == ["a1.lab.test", "a2.lab.test"]
    status, problem = lab.admin.delete("/systems/a1.lab.test")
    assert status == 409 and f"advance reservation {granted['id']}" in problem["detail"]
    status, problem = lab.admin.patch("/systems/a1.lab.test", {"condition": "removed"})
    assert status == 409
    status, problem = lab.admin.delete("/pools/fast/systems/a2.lab.test")
    assert status == 409 and "pool" in problem["detail"]
    status, problem = lab.admin.delete("/pools/fast")  # deleting the pool takes both systems out of it
    assert status == 409 and "pool" in problem["detail"]
    status, problem = lab.admin.put("/systems/a2.lab.test/access-policy", {"rules": []})
    assert status == 409 and "alice may no longer use a2.lab.test" in problem["detail"]
    assert lab.alice.get(f"/advance-reservations/{granted['id']}")[1]["state"] == "w"  # nothing happened
    # a breakdown is nobody's choice: it is not refused, the reservation goes into error
    assert lab.admin.patch("/systems/a2.lab.test", {"condition": "broken"})[0] == 200
    assert lab.alice.get(f"/advance-reservations/{granted['id']}")[1]["state"] == "E"
    status = lab.admin.delete("/pools/fast/systems/a1.lab.test", force="true")[0]
    assert status == 204
    _, shown = lab.alice.get(f"/advance-reservations/{granted['id']}")
    assert shown["state"] == "E" and shown["error_reasons"] == [
        "a1.lab.test is no longer in pool(s) fast", "a2.lab.test is broken"]
    _, log = lab.admin.get(f"/systems/a1.lab.test/activity")
    with UnitOfWork(lab.db, write=False) as uow:
        from lablease.services.records import activity

        forced = [e for e in activity.entries(uow, "advance_reservation", granted["id"], PageRequest()).items if e["action"] == "forced"]
    assert forced and "pool" in forced[0]["new"]


def test_force_counts_in_the_json_body_as_in_the_query_string(lab):
    lab.admin.post("/pools", {"name": "fast"})
    for fqdn in ("a1.lab.test", "a2.lab.test"):
        lab.admin.post("/pools/fast/systems", {"fqdn": fqdn})
    _, granted = ar(lab, pools=["fast"])
    refusal = lab.admin.call("DELETE", "/pools/fast/systems/a1.lab.test", {"force": False})
    assert refusal[0] == 409 and "repeat with force=true" in refusal[1]["detail"]
    # either place forces it: ?force=true forces even where the body says false
    assert lab.admin.call("DELETE", "/pools/fast/systems/a1.lab.test", {"force": False},
                          query_string={"force": "true"})[0] == 204
    # a body that changes the resource carries it beside the fields, which are applied as usual
    status, system = lab.admin.patch("/systems/a2.lab.test", {"condition": "removed", "force": True})
    assert status == 200 and system["condition"] == "removed"
    _, shown = lab.alice.get(f"/advance-reservations/{granted['id']}")
    assert shown["state"] == "E" and shown["error_reasons"] == [
        "a1.lab.test is no longer in pool(s) fast", "a2.lab.test is removed"]
    # routes that take no force refuse it as any unknown field
    status, problem = lab.admin.post("/pools", {"name": "slow", "force": True})
    assert (status, problem["detail"]) == (422, "unknown field 'force'")


def test_the_api_description_documents_force_in_the_body_where_the_query_takes_it(lab):
    _, spec = lab.alice.get("/openapi.json")
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            in_query = any(p["name"] == "force" for p in operation["parameters"])
            body = operation.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema", {})
            assert in_query == ("force" in body.get("properties", {})), (method, path)
            if method == "delete" and in_query:
                assert operation["requestBody"]["required"] is False, path  # a bare DELETE still works


def test_mail_and_webhooks_go_through_the_outbox(db, tmp_path):
    lab = Lab(db, Settings(data_dir=str(tmp_path / "data"), smtp_host="127.0.0.1",
                           webhook_allowed_networks=("127.0.0.1/32",)))
    lab.system("m1.lab.test", condition="automated")
    lab.admin.patch("/me", {"email": "admin@lab.test", "webhook_url": "http://127.0.0.1:9/hook"})
    status, granted = lab.admin.post("/advance-reservations", {
        "start": at(START + H), "duration": "1h", "mail": {"events": "be", "to": ["ops@lab.test"]}})
    assert status == 201, granted
    run_due(lab.db, START + H, lab.settings)
    run_due(lab.db, START + 2 * H, lab.settings)
    with UnitOfWork(lab.db, write=False) as uow:
        rows = [(r.channel, r.destination, r.payload["event"]) for r in uow.session.query(Outbox).order_by(Outbox.id)]
    webhooks = [event for channel, _, event in rows if channel == "webhook"]
    assert webhooks == ["ar.created", "ar.state_changed", "ar.state_changed"]
    mails = [(destination, event) for channel, destination, event in rows if channel == "mail"]
    assert mails == [("admin@lab.test", "ar.state_changed"), ("ops@lab.test", "ar.state_changed")] * 2


def test_outside_work_backfills_before_the_window_but_never_overlaps_it(lab):
    for fqdn in ("big.lab.test",):
        lab.admin.patch(f"/systems/{fqdn}", {"condition": "broken"})  # keep the test to a1..a3
    _, granted = ar(lab, count=3)  # a1, a2, a3 from START+1h
    _, unlimited = lab.bob.post("/jobs", {"recipe_sets": [{"recipes": [{}]}]})
    assert unlimited["recipe_sets"][0]["recipes"][0]["status"] == "queued"  # it might never end
    _, short = lab.bob.post("/jobs", {"recipe_sets": [{"recipes": [{"runtime_limit": 1800}]}]})
    placed = short["recipe_sets"][0]["recipes"][0]
    assert placed["status"] == "running" and placed["system"] in granted["systems"]  # done before the AR starts
    _, long = lab.bob.post("/jobs", {"recipe_sets": [{"recipes": [{"runtime_limit": 7200}]}]})
    assert long["recipe_sets"][0]["recipes"][0]["status"] == "queued"  # would run into the window


def test_soft_errors_keep_the_other_systems_usable_hard_ones_stop_new_work(lab):
    for handling, expected in (("soft", "running"), ("hard", "queued")):
        _, granted = ar(lab, count=2, error_handling=handling, start=at(lab.clock() + H))
        run(lab, lab.clock() + H)
        broken, healthy = granted["systems"]
        lab.admin.patch(f"/systems/{broken}", {"condition": "broken"})
        assert lab.alice.get(f"/advance-reservations/{granted['id']}")[1]["state"] == "E"
        _, job = lab.alice.post("/jobs", {"recipe_sets": [{"ar": granted["id"], "recipes": [{"runtime_limit": 600}]}]})
        recipe = job["recipe_sets"][0]["recipes"][0]
        assert recipe["status"] == expected, (handling, recipe)
        if expected == "running":
            assert recipe["system"] == healthy
        lab.admin.patch(f"/systems/{broken}", {"condition": "automated"})
        lab.alice.delete(f"/advance-reservations/{granted['id']}", force="true")
        assert lab.alice.get(f"/recipes/{recipe['id']}")[1]["status"] == "aborted"  # running or not yet


def test_bound_work_that_could_no_longer_end_in_time_is_not_started(lab):
    _, granted = ar(lab, count=1, hosts=["a1.lab.test"], duration="1h")
    _, first = lab.alice.post("/jobs", {"recipe_sets": [{"ar": granted["id"], "recipes": [{"runtime_limit": 1800}]}]})
    _, second = lab.alice.post("/jobs", {"recipe_sets": [{"ar": granted["id"], "recipes": [{"runtime_limit": 1800}]}]})
    run(lab, START + H)
    first_recipe, second_recipe = first["recipe_sets"][0]["recipes"][0], second["recipe_sets"][0]["recipes"][0]
    assert lab.alice.get(f"/recipes/{first_recipe['id']}")[1]["status"] == "running"
    lab.clock.now = START + H + timedelta(minutes=20)
    lab.alice.patch(f"/recipes/{first_recipe['id']}", {"status": "completed", "result": "pass"})
    # 40 minutes left, minus the 1 minute offset: a 30-minute recipe still fits
    assert lab.alice.get(f"/recipes/{second_recipe['id']}")[1]["status"] == "running"
    _, third = lab.alice.post("/jobs", {"recipe_sets": [{"ar": granted["id"], "recipes": [{"runtime_limit": 1800}]}]})
    third_recipe = third["recipe_sets"][0]["recipes"][0]
    assert third_recipe["status"] == "queued"  # it fits the window, but a1 is busy
    lab.clock.now = START + H + timedelta(minutes=35)
    lab.alice.patch(f"/recipes/{second_recipe['id']}", {"status": "completed", "result": "pass"})
    # a1 is free, but 30 minutes from now is past the AR's end minus the offset: not started
    assert lab.alice.get(f"/recipes/{third_recipe['id']}")[1]["status"] == "queued"
