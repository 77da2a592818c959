"""Reservations over the API, on SQLite and PostgreSQL."""
from datetime import timedelta
from pathlib import Path

import yaml

from .conftest import START, at

TIME_CASES = yaml.safe_load((Path(__file__).resolve().parents[2] / "time_cases.yml").read_text())

H = timedelta(hours=1)


def test_reserve_show_and_return(lab):
    lab.system()
    status, reservation = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "4h"})
    assert status == 201
    assert reservation["user"] == "alice" and reservation["state"] == "active" and reservation["kind"] == "manual"
    assert reservation["start"] == at(START) and reservation["end"] == at(START + 4 * H)
    assert reservation["seconds_left"] == 4 * 3600

    status, system = lab.bob.get("/systems/s1.lab.test")
    assert system["reservation"] == {"id": reservation["id"], "user": "alice", "start": at(START), "end": at(START + 4 * H),
                                     "purpose": None}

    lab.clock.advance(hours=1)
    status, _ = lab.alice.delete(f"/reservations/{reservation['id']}")
    assert status == 204
    status, returned = lab.alice.get(f"/reservations/{reservation['id']}")
    assert returned["state"] == "returned" and returned["returned_at"] == at(START + H)
    assert returned["end"] == at(START + H)
    # the calendar is free again from the return on
    status, again = lab.bob.post("/reservations", {"system": "s1.lab.test", "duration": "1h"})
    assert status == 201, again


def test_default_duration_is_the_site_default(lab):
    lab.system()
    _, reservation = lab.alice.post("/reservations", {"system": "s1.lab.test"})
    assert reservation["end"] == at(START + 24 * H)


def test_overlap_is_refused_naming_the_holder(lab):
    lab.system()
    lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "2h"})
    status, problem = lab.bob.post("/reservations", {"system": "s1.lab.test", "start": at(START + H), "duration": "2h"})
    assert status == 409
    assert problem["title"] == "Booking conflict"
    assert problem["detail"] == f"s1.lab.test is reserved by alice from {at(START)} until {at(START + 2 * H)}"
    assert problem["conflict"]["user"] == "alice" and problem["conflict"]["end"] == at(START + 2 * H)
    _, held = lab.admin.get(f"/reservations/{problem['conflict']['id']}")
    assert held["user"] == "alice"  # the id names the reservation, which a client can look up
    # back to back is fine
    status, _ = lab.bob.post("/reservations", {"system": "s1.lab.test", "start": at(START + 2 * H), "duration": "2h"})
    assert status == 201


def test_reserve_in_advance(lab):
    lab.system()
    status, future = lab.alice.post("/reservations", {"system": "s1.lab.test", "start": at(START + 48 * H),
                                                       "end": at(START + 50 * H)})
    assert status == 201 and future["state"] == "upcoming"
    status, now = lab.bob.post("/reservations", {"system": "s1.lab.test", "duration": "24h"})
    assert status == 201  # the system is free until the advance reservation begins
    status, problem = lab.bob.post("/reservations", {"system": "s1.lab.test", "start": at(START + 30 * H),
                                                     "duration": "20h"})
    assert status == 409 and "alice" in problem["detail"]
    lab.clock.advance(hours=48)
    _, future = lab.alice.get(f"/reservations/{future['id']}")
    assert future["state"] == "active"


def test_request_id_makes_a_retry_idempotent(lab):
    lab.system()
    body = {"system": "s1.lab.test", "duration": "1h", "request_id": "ci-build-42"}
    status, first = lab.alice.post("/reservations", body)
    assert status == 201
    lab.clock.advance(minutes=1)
    status, second = lab.alice.post("/reservations", body)
    assert status == 200 and second["id"] == first["id"] and second["end"] == first["end"]
    _, mine = lab.alice.get("/reservations", system="s1.lab.test")
    assert len(mine) == 1
    # another user's request id is their own
    status, problem = lab.bob.post("/reservations", body)
    assert status == 409


def test_a_request_id_with_a_different_request_is_refused_naming_what_differs(lab):
    lab.system()
    lab.system("s2.lab.test")
    body = {"system": "s1.lab.test", "start": at(START + H), "duration": "1h", "request_id": "ci-build-43"}
    status, first = lab.alice.post("/reservations", body)
    assert status == 201, first
    lab.clock.advance(minutes=1)
    cases = [
        ({"system": "s2.lab.test"}, ["system"]),
        ({"start": at(START + 2 * H)}, ["start"]),
        ({"duration": "2h"}, ["duration"]),
        ({"end": at(START + 3 * H), "duration": None}, ["end"]),
        ({"system": "s2.lab.test", "duration": "2h", "return_loan": True}, ["system", "duration", "return_loan"]),
    ]
    for change, named in cases:
        asked = {k: v for k, v in {**body, **change}.items() if v is not None}
        status, problem = lab.alice.post("/reservations", asked)
        assert status == 409, (change, problem)
        assert [d.split(" ")[0] for d in problem["differs"]] == named, problem
        assert f"reservation {first['id']}" in problem["detail"]
    status, problem = lab.alice.post("/reservations", {**body, "duration": "2h"})
    assert "duration (first 1h, now 2h)" in problem["detail"]
    status, again = lab.alice.post("/reservations", {**body, "system": "S1.lab.test"})  # the same, retried
    assert status == 200 and again["id"] == first["id"]
    _, mine = lab.alice.get("/reservations")
    assert [r["id"] for r in mine] == [first["id"]]
    lab.clock.advance(hours=1, minutes=10)
    assert lab.alice.delete(f"/reservations/{first['id']}")[0] == 204
    status, returned = lab.alice.post("/reservations", body)  # its end is now when it was returned
    assert status == 200 and returned["id"] == first["id"] and returned["state"] == "returned"


def test_extend_by_adds_to_the_current_end_and_is_logged(lab):
    lab.system()
    _, r = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "2h"})
    lab.clock.advance(hours=1)
    status, r2 = lab.alice.patch(f"/reservations/{r['id']}", {"extend_by": "1h"})
    assert status == 200 and r2["end"] == at(START + 3 * H)
    status, r3 = lab.alice.patch(f"/reservations/{r['id']}", {"end": at(START + 10 * H)})
    assert r3["end"] == at(START + 10 * H)
    _, log = lab.alice.get(f"/reservations/{r['id']}/activity")
    extensions = [e for e in log if e["action"] == "extended"]
    assert [(e["old"], e["new"]) for e in reversed(extensions)] == [
        (at(START + 2 * H), at(START + 3 * H)), (at(START + 3 * H), at(START + 10 * H))]
    assert all(e["user"] == "alice" for e in extensions)


def test_extension_never_runs_into_the_next_booking(lab):
    lab.system()
    _, mine = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "2h"})
    lab.bob.post("/reservations", {"system": "s1.lab.test", "start": at(START + 3 * H), "duration": "1h"})
    status, problem = lab.alice.patch(f"/reservations/{mine['id']}", {"extend_by": "2h"})
    assert status == 409 and "bob" in problem["detail"]
    _, unchanged = lab.alice.get(f"/reservations/{mine['id']}")
    assert unchanged["end"] == at(START + 2 * H)
    status, _ = lab.alice.patch(f"/reservations/{mine['id']}", {"extend_by": "1h"})
    assert status == 200


def test_others_cannot_extend_or_return(lab):
    lab.system()
    _, r = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "2h"})
    status, problem = lab.bob.patch(f"/reservations/{r['id']}", {"extend_by": "1h"})
    assert status == 403 and "another user" in problem["detail"]
    status, _ = lab.bob.delete(f"/reservations/{r['id']}")
    assert status == 403
    status, _ = lab.admin.delete(f"/reservations/{r['id']}")
    assert status == 204


def test_invalid_input_names_the_field(lab):
    lab.system()
    cases = [
        ({"system": "s1.lab.test", "duration": "soon"}, "duration"),
        ({"system": "s1.lab.test", "start": "tomorrow"}, "start"),
        ({"system": "s1.lab.test", "start": at(START + 2 * H), "end": at(START + H)}, "end"),
        ({"system": "s1.lab.test", "duration": "1h", "end": at(START + H)}, "duration"),
        ({"system": "s1.lab.test", "duration": "unlimited"}, "duration"),
        ({"system": "s1.lab.test", "heartbeat": "1s"}, "heartbeat"),
        ({"system": "s1.lab.test", "colour": "red"}, "colour"),
        ({"duration": "1h"}, "system"),
        ({"system": 5}, "system"),
    ]
    for body, field in cases:
        status, problem = lab.alice.post("/reservations", body)
        assert status == 422, (body, problem)
        assert problem["field"] == field, (body, problem)
        assert problem["detail"].startswith(field) or problem["detail"] == f"unknown field {field!r}"
    _, listed = lab.admin.get("/reservations")
    assert listed == []  # nothing half-written


def test_unknown_system_is_404_and_malformed_json_400(lab):
    status, problem = lab.alice.post("/reservations", {"system": "nope.lab.test"})
    assert status == 404 and problem["detail"] == "no system named nope.lab.test"
    response = lab.client.post("/api/v1/reservations", data="{not json", content_type="application/json",
                               headers={"Authorization": f"Bearer {lab.tokens['alice']}"})
    assert response.status_code == 400 and response.mimetype == "application/problem+json"
    assert "not valid JSON" in response.get_json()["detail"]


def test_huge_body_is_413(lab):
    lab.system()
    big = '{"system": "s1.lab.test", "request_id": "' + "x" * (2 * 1024 * 1024) + '"}'
    response = lab.client.post("/api/v1/reservations", data=big, content_type="application/json",
                               headers={"Authorization": f"Bearer {lab.tokens['alice']}"})
    assert response.status_code == 413 and response.mimetype == "application/problem+json"


def test_automated_systems_are_not_reservable_by_hand(lab):
    lab.system(condition="automated")
    status, problem = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "1h"})
    assert status == 403 and "automated" in problem["detail"]
    status, _ = lab.admin.post("/reservations", {"system": "s1.lab.test", "duration": "1h"})
    assert status == 201


def test_users_see_their_own_reservations_admins_all(lab):
    lab.system()
    lab.system("s2.lab.test")
    lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "1h"})
    lab.bob.post("/reservations", {"system": "s2.lab.test", "duration": "1h"})
    _, mine = lab.alice.get("/reservations")
    assert [r["user"] for r in mine] == ["alice"]
    _, everyone = lab.admin.get("/reservations")
    assert sorted(r["user"] for r in everyone) == ["alice", "bob"]
    _, bobs = lab.admin.get("/reservations", user="bob", active="true")
    assert [r["system"] for r in bobs] == ["s2.lab.test"]


def test_site_maximum_and_unlimited_settings(db):
    from lablease.config import Settings

    from .conftest import Lab

    lab = Lab(db, Settings(default_reservation_duration="4h", max_reservation_duration="8h"))
    lab.system()
    status, problem = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "9h"})
    assert status == 422 and "maximum of 8h" in problem["detail"]
    status, problem = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "unlimited"})
    assert status == 422  # unlimited is longer than the maximum (and a site cannot allow it with one: test_config)


def test_unlimited_where_the_site_allows_it(db):
    from lablease.config import Settings

    from .conftest import Lab

    lab = Lab(db, Settings(allow_unlimited_reservations=True))
    lab.system()
    status, reservation = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "unlimited"})
    assert status == 201 and reservation["end"] is None and reservation["seconds_left"] is None
    status, problem = lab.bob.post("/reservations", {"system": "s1.lab.test", "start": at(START + 1000 * H)})
    assert status == 409 and "until further notice" in problem["detail"]


def test_a_returned_reservation_cannot_be_returned_or_extended_again(lab):
    lab.system()
    _, r = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "2h"})
    assert lab.alice.delete(f"/reservations/{r['id']}")[0] == 204
    status, problem = lab.alice.delete(f"/reservations/{r['id']}")
    assert status == 409 and problem["detail"].startswith(f"reservation {r['id']} was already returned at ")
    assert problem["type"] == "urn:lablease:problem:reservation-ended"  # not "taken": a client tells them apart
    assert lab.alice.patch(f"/reservations/{r['id']}", {"extend_by": "1h"})[0] == 409


def test_years_and_months_are_refused_in_both_forms_with_one_message(lab):
    lab.system()
    details = set()
    for duration in ("1y", "P1Y", "2 months", "P2M"):
        status, problem = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": duration})
        assert status == 422, duration
        details.add(problem["detail"])
    assert details == {"duration: years and months have no fixed length; use weeks or days"}
    _, mine = lab.alice.get("/reservations")
    assert mine == []


def test_the_api_reads_durations_and_times_as_the_table_of_cases_says(lab):
    """tests/time_cases.yml through the API: what the collection's copy accepts, the server takes, and
    what it refuses, the server refuses in the same words (a 422 naming the field); answers write the time."""
    lab.system()
    # (unlimited is a reservation's own word, refused here by the site's setting: test_unlimited_where_the_site_allows_it)
    for case in (c for c in TIME_CASES["durations"] if isinstance(c["text"], str) and c["text"] != "unlimited"):
        status, answer = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": case["text"]})
        if "seconds" in case:
            assert (status, answer["end"]) == (201, at(START + timedelta(seconds=case["seconds"]))), case
            assert lab.alice.delete(f"/reservations/{answer['id']}")[0] == 204
        else:
            assert (status, answer["detail"]) == (422, f"duration: {case['refused']}"), case
    for case in (c for c in TIME_CASES["times"] if isinstance(c["text"], str)):
        status, answer = lab.alice.get("/systems", free_from=case["text"])
        if "normalised" in case:
            assert status == 200, case
        else:
            assert (status, answer["detail"]) == (422, f"free_from: {case['refused']}"), case
    _, mine = lab.alice.get("/reservations", active="true")
    assert mine == []


def test_a_misspelt_field_is_named_as_unknown_with_the_field_it_was_meant_to_be(lab):
    lab.system()
    status, problem = lab.alice.post("/reservations", {"sytem": "s1.lab.test", "duration": "1h"})
    assert status == 422
    assert problem["detail"] == "unknown field 'sytem'; did you mean 'system'?"
    assert problem["field"] == "sytem"
    status, problem = lab.alice.post("/reservations", {"system": "s1.lab.test", "colour": "blue"})
    assert (status, problem["detail"]) == (422, "unknown field 'colour'")  # nothing close to it
    status, problem = lab.admin.post("/advance-reservations", {"duration": "1h", "mail": {"evnts": "b"}})
    assert (status, problem["detail"]) == (422, "unknown field 'mail.evnts'; did you mean 'mail.events'?")
    assert lab.alice.get("/reservations")[1] == []
