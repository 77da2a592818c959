"""Refusals and explanations say what the request sent and what is really in the way (exact texts)."""
from datetime import timedelta

import pytest

from lablease.config import Settings
from lablease.services.people import users
from lablease.store.uow import UnitOfWork
from lablease.worker.loop import run_due

from .conftest import START, Lab, at

H = timedelta(hours=1)


@pytest.fixture
def lab(db, tmp_path):
    lab = Lab(db, Settings(data_dir=str(tmp_path / "data"), max_reservation_duration="1w"))
    with UnitOfWork(db) as uow:
        users.ensure_arusers(uow, START)
        uow.commit()
    lab.admin.post("/groups/arusers/members", {"user": "alice"})
    return lab


def detail(answer) -> tuple[int, str, str]:
    status, problem = answer
    return status, problem.get("field"), problem["detail"]


def test_the_maximum_names_the_field_the_request_sent(lab):
    lab.system()
    _, r = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "6d"})
    latest = "it may end at 2026-11-29T12:00:00Z at the latest"
    assert detail(lab.alice.patch(f"/reservations/{r['id']}", {"extend_by": "2d"})) == (
        422, "extend_by", f"extend_by: would make the reservation longer than this site's maximum of 1w ({latest})")
    assert detail(lab.alice.patch(f"/reservations/{r['id']}", {"end": at(START + 8 * 24 * H)})) == (
        422, "end", f"end: would make the reservation longer than this site's maximum of 1w ({latest})")
    assert detail(lab.bob.post("/reservations", {"system": "s1.lab.test", "start": at(START + 30 * 24 * H),
                                                 "end": at(START + 40 * 24 * H)}))[:2] == (422, "end")
    assert detail(lab.bob.post("/reservations", {"system": "s1.lab.test", "start": at(START + 30 * 24 * H),
                                                 "duration": "8d"}))[:2] == (422, "duration")
    assert lab.alice.get(f"/reservations/{r['id']}")[1]["end"] == at(START + 6 * 24 * H)


def test_the_loan_cap_shows_its_time_to_the_second(lab):
    lab.system("a1.lab.test", condition="automated")
    lab.clock.now = START + timedelta(microseconds=123456)  # a loan made at a moment with microseconds
    lab.admin.post("/systems/a1.lab.test/loan", {"recipient": "bob", "duration": "2d"})
    assert detail(lab.bob.post("/reservations", {"system": "a1.lab.test", "duration": "3d"})) == (
        422, "duration", "duration: would end the reservation past the end of your loan of this system "
                         "(2026-11-24T12:00:00Z)")
    _, r = lab.bob.post("/reservations", {"system": "a1.lab.test", "duration": "1d"})
    assert detail(lab.bob.patch(f"/reservations/{r['id']}", {"extend_by": "2d"})) == (
        422, "extend_by", "extend_by: would end the reservation past the end of your loan of this system "
                          "(2026-11-24T12:00:00Z)")


def test_a_reversed_free_window_names_free_from_and_free_until(lab):
    assert detail(lab.alice.get("/systems", free_from=at(START + 2 * H), free_until=at(START + H))) == (
        422, "free_until", "free_until: must be after free_from (2026-11-22T14:00:00Z)")
    assert detail(lab.alice.get("/systems", free_until=at(START - H))) == (
        422, "free_until", "free_until: must be after now (2026-11-22T12:00:00Z)")


def test_an_over_large_number_is_too_large_not_unwhole(lab):
    for cpus in (99999999999999999999, 1e20):
        assert detail(lab.admin.post("/systems", {"fqdn": "n.lab.test", "arch": "x86_64", "cpus": cpus})) == (
            422, "cpus", "cpus: is too large (at most 2147483647)")
    assert lab.admin.post("/systems", {"fqdn": "n.lab.test", "arch": "x86_64", "cpus": 4.0})[1]["cpus"] == 4
    assert detail(lab.admin.get("/systems/n.lab.test/activity", limit="99999999999")) == (
        422, "limit", "limit: is too large (at most 1000)")
    assert detail(lab.alice.post("/advance-reservations", {"duration": "1h", "count": 10**30})) == (
        422, "count", "count: is too large (at most 2147483647)")


def test_the_queue_says_what_ruled_systems_out_and_that_a_loan_passes(lab):
    for name in ("a1", "a2"):
        lab.system(f"{name}.lab.test", condition="automated")
    lab.admin.post("/systems/a1.lab.test/loan", {"recipient": "bob"})
    lab.alice.post("/jobs", {"recipe_sets": [{"recipes": [
        {"host_requires": {"field": "hostname", "op": "=", "value": "a1.lab.test"}}]}]})
    _, queue = lab.alice.get("/queue")
    # The queue counts what is off the recipe's candidate list under one reason; its own page names each one
    assert queue[0]["why"] == ("1 system(s) ruled out: outside its host requirements or its owner's access; "
                               "1 system(s) ruled out: the system is lent to another user; it waits for a loan to "
                               "end: the systems that could run it are lent to someone else")
    assert lab.alice.get(f"/recipes/{queue[0]['recipe']}")[1]["why"]["message"] == (
        "1 system(s) ruled out: hostname = a1.lab.test; 1 system(s) ruled out: the system is "
        "lent to another user; it waits for a loan to end: the systems that could run it are lent to someone else")
    status, problem = lab.alice.post("/jobs", {"recipe_sets": [{"recipes": [
        {"host_requires": {"field": "arch", "op": "=", "value": "s390x"}}]}]})
    assert status == 409 and problem["detail"].startswith(  # never queued: it could never start
        "recipe set 1 can never start: its 1 recipe(s) need a distinct system each, and of the Automated systems "
        "you may be given (not Manual, broken or removed) none matches")


def test_advance_reservations_are_named_for_what_they_do(lab):
    lab.system("a1.lab.test", condition="automated")
    lab.system("a2.lab.test", condition="automated")
    _, ar = lab.alice.post("/advance-reservations", {"start": at(START + 10 * H), "duration": "2h",
                                                     "hosts": ["a1.lab.test"]})
    inside = {"system": "a1.lab.test", "advance_reservation": ar["id"], "start": at(START + 10 * H), "duration": "1h"}
    assert detail(lab.bob.post("/reservations", inside)) == (
        403, None, f"you are not in the ACL of advance reservation {ar['id']}")
    assert detail(lab.bob.post("/reservations", {**inside, "advance_reservation": 999})) == (
        422, "advance_reservation", "advance_reservation: no active advance reservation 999")

    _, later = lab.alice.post("/advance-reservations", {"start": at(START + 20 * H), "duration": "2h",
                                                        "hosts": ["a2.lab.test"]})
    lab.alice.post("/jobs", {"recipe_sets": [{"ar": later["id"], "recipes": [{"runtime_limit": 1800}]}]})
    _, queue = lab.alice.get("/queue")
    assert queue[0]["why"] == f"waits for advance reservation {later['id']}, which starts at 2026-11-23T08:00:00Z"

    lab.alice.patch(f"/advance-reservations/{ar['id']}", {"acl": ["bob"]})
    run_due(lab.db, START + 10 * H, lab.settings)
    lab.clock.now = START + 10 * H
    _, mine = lab.bob.post("/reservations", {**inside, "start": at(START + 10 * H)})
    assert detail(lab.bob.patch(f"/reservations/{mine['id']}", {"extend_by": "2h"})) == (
        422, "extend_by", f"extend_by: advance reservation {ar['id']} ends at 2026-11-23T00:00:00Z; "
                          "a reservation inside it cannot go past that")


def test_a_loan_is_named_only_when_it_alone_is_in_the_way(lab):
    lab.system("a1.lab.test", condition="automated")
    rules = lab.admin.get("/systems/a1.lab.test/access-policy")[1]["rules"]
    for rule in rules:  # nobody but the owner and whoever it is lent to may use it
        if rule["permission"] == "reserve":
            lab.admin.delete(f"/systems/a1.lab.test/access-policy/rules/{rule['id']}")
    lab.admin.post("/systems/a1.lab.test/loan", {"recipient": "bob"})
    status, problem = lab.alice.post("/jobs", {"recipe_sets": [{"recipes": [{}]}]})
    # alice may not use it even once bob's loan ends: that is what she is told, at once (no loan to wait for)
    assert status == 409 and "can never start" in problem["detail"] and "none matches" in problem["detail"]
