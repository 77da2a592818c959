"""Generic schedule subjects: reserve / find / update / cancel, capacity, default duration."""
from datetime import timedelta

from .conftest import START, at

H = timedelta(hours=1)


def make_subject(lab, name="ip", default="2h"):
    status, body = lab.admin.put(f"/schedules/{name}", {"default_duration": default})
    assert status == 201, body
    return body


def test_subjects_are_made_by_admins(lab):
    status, problem = lab.alice.put("/schedules/ip", {})
    assert status == 403
    body = make_subject(lab)
    assert body == {"name": "ip", "default_duration": "PT2H", "resources": {}}
    status, problem = lab.alice.post("/schedules/vlan/reservations", {"resource_id": "100"})
    assert status == 404 and "no schedule subject named vlan" in problem["detail"]


def test_best_effort_uses_the_default_duration_and_refuses_overlap(lab):
    make_subject(lab)
    status, booking = lab.alice.post("/schedules/ip/reservations",
                                     {"resource_id": "10.0.0.5", "resource_spec": {"netmask": 24}, "slice": "s1"})
    assert status == 201
    assert booking["start"] == at(START) and booking["end"] == at(START + 2 * H)
    assert booking["resource_spec"] == {"netmask": 24} and booking["user"] == "alice"
    status, problem = lab.bob.post("/schedules/ip/reservations", {"resource_id": "10.0.0.5", "duration": "1h"})
    assert status == 409 and "alice" in problem["detail"]
    status, _ = lab.bob.post("/schedules/ip/reservations", {"resource_id": "10.0.0.6", "duration": "1h"})
    assert status == 201


def test_pre_booking_and_find_by_period(lab):
    make_subject(lab)
    lab.alice.post("/schedules/ip/reservations", {"resource_id": "a", "duration": "1h", "slice": "x"})
    lab.bob.post("/schedules/ip/reservations", {"resource_id": "a", "start": at(START + 5 * H), "duration": "1h"})
    lab.bob.post("/schedules/ip/reservations", {"resource_id": "b", "start": at(START + 2 * H), "duration": "4h"})

    def found(**filters):
        status, body = lab.alice.get("/schedules/ip/reservations", **filters)
        assert status == 200, body
        return [(b["resource_id"], b["user"]) for b in body]

    assert found() == [("a", "alice"), ("b", "bob"), ("a", "bob")]
    assert found(start=at(START + 30 * timedelta(minutes=1)), end=at(START + 3 * H)) == [("a", "alice"), ("b", "bob")]
    assert found(start=at(START + 6 * H)) == []  # touching means overlapping; back-to-back is not touching
    assert found(start=at(START + 5 * H)) == [("b", "bob"), ("a", "bob")]
    assert found(user="bob", resource_id="a") == [("a", "bob")]
    assert found(slice="x") == [("a", "alice")]


def test_capacity_counts_seats(lab):
    make_subject(lab, "licence")
    status, body = lab.admin.put("/schedules/licence/resources/matlab", {"capacity": 3})
    assert status == 200 and body["capacity"] == 3
    assert lab.alice.post("/schedules/licence/reservations", {"resource_id": "matlab", "quantity": 2})[0] == 201
    assert lab.bob.post("/schedules/licence/reservations", {"resource_id": "matlab", "quantity": 1})[0] == 201
    status, problem = lab.bob.post("/schedules/licence/reservations", {"resource_id": "matlab", "quantity": 1})
    assert status == 409 and "3 of 3 already booked" in problem["detail"]
    # later, when the first bookings are over, seats are free again
    later = {"resource_id": "matlab", "quantity": 3, "start": at(START + 2 * H), "duration": "1h"}
    assert lab.bob.post("/schedules/licence/reservations", later)[0] == 201
    status, problem = lab.admin.put("/schedules/licence/resources/matlab", {"capacity": 2})
    assert status == 409 and "too small" in problem["detail"]


def test_update_and_cancel(lab):
    make_subject(lab)
    _, mine = lab.alice.post("/schedules/ip/reservations", {"resource_id": "a", "duration": "1h"})
    lab.bob.post("/schedules/ip/reservations", {"resource_id": "a", "start": at(START + 2 * H), "duration": "1h"})
    status, problem = lab.alice.patch(f"/schedules/ip/reservations/{mine['id']}", {"end": at(START + 3 * H)})
    assert status == 409
    status, moved = lab.alice.patch(f"/schedules/ip/reservations/{mine['id']}",
                                    {"end": at(START + 2 * H), "slice": "s9"})
    assert status == 200 and moved["end"] == at(START + 2 * H) and moved["slice"] == "s9"
    assert lab.bob.patch(f"/schedules/ip/reservations/{mine['id']}", {"slice": "x"})[0] == 403
    assert lab.bob.delete(f"/schedules/ip/reservations/{mine['id']}")[0] == 403
    assert lab.alice.delete(f"/schedules/ip/reservations/{mine['id']}")[0] == 204
    assert lab.alice.get(f"/schedules/ip/reservations/{mine['id']}")[0] == 404
    assert lab.bob.post("/schedules/ip/reservations", {"resource_id": "a", "duration": "1h"})[0] == 201


def test_admins_book_for_others(lab):
    make_subject(lab)
    status, booking = lab.admin.post("/schedules/ip/reservations", {"resource_id": "a", "user": "bob"})
    assert status == 201 and booking["user"] == "bob"
    status, _ = lab.alice.post("/schedules/ip/reservations", {"resource_id": "b", "user": "bob"})
    assert status == 403
