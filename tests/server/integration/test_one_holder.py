"""A system has one holder at a time, whatever kind: a recipe's reservation ends only with its recipe.

Returning the reservation a recipe runs on is refused (409 naming the recipe and what to do); the server
ending it (a removed system, a loan that ended) ends the recipe first; and the database itself refuses a
running recipe without its reservation, or two overlapping bookings of one system (migration 0024).
"""
from datetime import timedelta

import pytest
from sqlalchemy import bindparam, text
from sqlalchemy.exc import IntegrityError

from lablease.store.types import UTCDateTime

from .conftest import START, at


def _job(lab, user, **recipe):
    status, body = getattr(lab, user).post("/jobs", {"recipe_sets": [{"recipes": [recipe]}]})
    assert status == 201, body
    return {**body["recipe_sets"][0]["recipes"][0], "job": body["id"]}


def _recipe(lab, recipe_id):
    status, body = lab.admin.get(f"/recipes/{recipe_id}")
    assert status == 200, body
    return body


def _held_by(lab, fqdn):
    """The reservation holding the system now, as its holder sees it."""
    status, system = lab.admin.get(f"/systems/{fqdn}")
    assert status == 200, system
    status, reservation = lab.admin.get(f"/reservations/{system['reservation']['id']}")
    assert status == 200, reservation
    return reservation


def test_an_earlier_end_of_a_recipes_reservation_is_refused_as_its_return_a_later_one_is_taken(lab):
    lab.system("n1.lab.test", condition="automated")
    running = _job(lab, "alice", runtime_limit=7200)
    held = _held_by(lab, "n1.lab.test")
    assert held["kind"] == "recipe" and held["end"] is not None, held
    status, problem = lab.alice.patch(f"/reservations/{held['id']}", {"end": at(START + timedelta(minutes=1))})
    assert status == 409, problem
    assert f"recipe {running['id']} of job {running['job']}" in problem["detail"], problem
    assert "an earlier end would end the recipe" in problem["detail"], problem
    assert f"lablease job cancel {running['job']}" in problem["detail"], problem
    assert _held_by(lab, "n1.lab.test")["end"] == held["end"]
    status, later = lab.alice.patch(f"/reservations/{held['id']}", {"extend_by": "1h"})
    assert status == 200 and later["end"] > held["end"], later
    assert _recipe(lab, running["id"])["status"] == "running"


def test_a_waiting_set_never_holds_a_system_booked_later(lab):
    """Found by the property test: the head of the queue held a system free now but booked by an advance
    reservation later, open-ended, and the submit answered 409 (a booking conflict) instead of queueing."""
    lab.system("a1.lab.test", condition="automated")
    lab.system("a2.lab.test", condition="automated")
    busy = _job(lab, "bob")
    assert busy["status"] == "running", busy
    free = ({"a1.lab.test", "a2.lab.test"} - {busy["system"]}).pop()
    status, ar = lab.admin.post("/advance-reservations", {"hosts": [free], "start": at(START + timedelta(minutes=45)),
                                                           "duration": "1h"})
    assert status == 201, ar
    status, body = lab.alice.post("/jobs", {"recipe_sets": [{"recipes": [{"runtime_limit": 1800}] * 2}]})
    assert status == 201, body
    recipes = body["recipe_sets"][0]["recipes"]
    assert [r["status"] for r in recipes] == ["queued", "queued"], recipes
    assert all(r["system"] is None for r in recipes), recipes


def test_returning_a_recipes_reservation_is_refused_naming_the_recipe_and_the_way_out(lab):
    lab.system("n1.lab.test", condition="automated")
    lab.carol = lab.user("carol")
    running = _job(lab, "alice")
    assert running["status"] == "running" and running["system"] == "n1.lab.test"
    held = _held_by(lab, "n1.lab.test")
    assert held["kind"] == "recipe" and held["user"] == "alice" and held["id"] == running["reservation"]

    for caller in (lab.alice, lab.admin):
        status, problem = caller.delete(f"/reservations/{held['id']}")
        assert status == 409, problem
        assert f"recipe {running['id']} of job {running['job']}" in problem["detail"]
        assert f"lablease job cancel {running['job']}" in problem["detail"]

    waiting = _job(lab, "carol")
    assert waiting["status"] == "queued"  # n1 is still alice's recipe's, and nobody else's
    assert _recipe(lab, running["id"])["status"] == "running"
    assert _held_by(lab, "n1.lab.test")["id"] == held["id"]
    status, reservation = lab.alice.get(f"/reservations/{held['id']}")
    assert reservation["state"] == "active"

    # the way out the refusal names: the recipe ends, its reservation with it, and carol's job gets n1
    status, _ = lab.alice.post(f"/jobs/{running['job']}/cancel")
    assert status == 200
    assert _recipe(lab, waiting["id"])["status"] == "running"


def test_the_web_return_button_refuses_the_same(lab):
    lab.system("n1.lab.test", condition="automated")
    running = _job(lab, "alice")
    held = _held_by(lab, "n1.lab.test")
    from lablease.services.lifecycle import lease
    from lablease.services.handlers import unit_of_work
    from lablease.services.people.users import actor_for, find_user
    from lablease.domain.errors import Conflict

    with unit_of_work(lab.db, lab.settings) as uow:  # the page's view calls this use case (web/views)
        actor = actor_for(uow, find_user(uow, "alice"))
        with pytest.raises(Conflict, match=f"recipe {running['id']}"):
            lease.give_back(uow, actor, lab.clock(), held["id"])
    assert _recipe(lab, running["id"])["status"] == "running"


def test_removing_a_system_a_recipe_runs_on_ends_the_recipe_saying_why(lab):
    lab.system("n1.lab.test", condition="automated")
    running = _job(lab, "alice")
    held = _held_by(lab, "n1.lab.test")
    status, _ = lab.admin.delete("/systems/n1.lab.test", force="true")
    assert status == 204
    recipe = _recipe(lab, running["id"])
    assert recipe["status"] == "aborted"
    assert lab.alice.get(f"/reservations/{held['id']}")[1]["state"] == "returned"


def test_the_database_refuses_to_return_a_reservation_a_recipe_runs_on(lab):
    lab.system("n1.lab.test", condition="automated")
    _job(lab, "alice")
    held = _held_by(lab, "n1.lab.test")
    with pytest.raises(IntegrityError, match="one.holder"):
        with lab.db.writer.begin() as connection:
            connection.execute(text("UPDATE reservations SET returned_at = :now WHERE id = :id").bindparams(
                bindparam("now", type_=UTCDateTime())), {"now": START, "id": held["id"]})


def test_the_database_refuses_a_running_recipe_without_an_open_reservation(lab):
    lab.system("n1.lab.test", condition="automated")
    running = _job(lab, "alice")
    with pytest.raises(IntegrityError, match="one.holder"):
        with lab.db.writer.begin() as connection:
            connection.execute(text("UPDATE recipes SET reservation_id = NULL WHERE id = :id"), {"id": running["id"]})


def test_the_database_refuses_an_open_reservation_without_its_booking(lab):
    lab.system("n1.lab.test")
    status, made = lab.alice.post("/reservations", {"system": "n1.lab.test", "duration": "2h"})
    assert status == 201
    with pytest.raises(IntegrityError, match="one.holder"):
        with lab.db.writer.begin() as connection:
            connection.execute(text("UPDATE reservations SET booking_id = NULL WHERE id = :id"), {"id": made["id"]})


def test_the_database_refuses_overlapping_bookings_of_a_system_on_both_databases(lab):
    lab.system("n1.lab.test")
    status, made = lab.alice.post("/reservations", {"system": "n1.lab.test", "start": at(START), "duration": "2h"})
    assert status == 201
    with lab.db.writer.begin() as connection:
        resource = connection.execute(text("SELECT resource_id FROM systems WHERE fqdn = 'n1.lab.test'")).scalar_one()
    insert = text("INSERT INTO bookings (resource_id, start_at, end_at, quantity, exclusive, kind, created_at) "
                  "VALUES (:r, :s, :e, 1, :x, 'reservation', :s)").bindparams(
        bindparam("s", type_=UTCDateTime()), bindparam("e", type_=UTCDateTime()))
    for start, end in ((START, None), (START.replace(hour=13), START.replace(hour=15))):
        with pytest.raises(IntegrityError):
            with lab.db.writer.begin() as connection:
                connection.execute(insert, {"r": resource, "s": start, "e": end, "x": True})
    with lab.db.writer.begin() as connection:  # after the end: free
        connection.execute(insert, {"r": resource, "s": START.replace(hour=14), "e": None, "x": True})
