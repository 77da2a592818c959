"""Loans over the API: lending rules, exclusivity, caps, return_loan, expiry and its cascade."""
from datetime import timedelta

from lablease.worker.loop import run_due

from .conftest import START, at

H = timedelta(hours=1)


def grant_rule(lab, fqdn, permission, **who):
    status, body = lab.admin.post(f"/systems/{fqdn}/access-policy/rules", {"permission": permission, **who})
    assert status == 201, body
    return body


def test_owner_lends_to_anyone_loan_self_only_to_oneself(lab):
    lab.system()
    status, problem = lab.alice.post("/systems/s1.lab.test/loan", {"recipient": "alice"})
    assert status == 403 and "loan_self" in problem["detail"]
    grant_rule(lab, "s1.lab.test", "loan_self", user="alice")
    status, problem = lab.alice.post("/systems/s1.lab.test/loan", {"recipient": "bob"})
    assert status == 403 and "loan_any" in problem["detail"]
    status, loan = lab.alice.post("/systems/s1.lab.test/loan", {"recipient": "alice", "comment": "debugging"})
    assert status == 201
    assert loan["recipient"] == "alice" and loan["lender"] == "alice" and loan["end"] is None  # unlimited by default
    status, problem = lab.admin.post("/systems/s1.lab.test/loan", {"recipient": "bob"})
    assert status == 409 and "already lent to alice" in problem["detail"]
    _, system = lab.bob.get("/systems/s1.lab.test")
    assert system["loan"] == {"recipient": "alice", "end": None, "purpose": None}


def test_limited_loans_default_to_seven_days(lab):
    lab.system()
    _, loan = lab.admin.post("/systems/s1.lab.test/loan", {"recipient": "bob", "limited": True})
    assert loan["end"] == at(START + timedelta(days=7))
    lab.admin.delete("/systems/s1.lab.test/loan")
    _, loan = lab.admin.post("/systems/s1.lab.test/loan", {"recipient": "bob", "duration": "2h"})
    assert loan["end"] == at(START + 2 * H)


def test_a_loan_is_exclusive_and_opens_automated_systems_to_its_recipient(lab):
    lab.system(condition="automated")
    lab.admin.post("/systems/s1.lab.test/loan", {"recipient": "alice"})
    status, _ = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "1h"})
    assert status == 201
    lab.system("m1.lab.test")
    lab.admin.post("/systems/m1.lab.test/loan", {"recipient": "alice"})
    status, problem = lab.bob.post("/reservations", {"system": "m1.lab.test", "duration": "1h"})
    assert status == 403 and "lent to another user" in problem["detail"]


def test_reservations_are_capped_at_a_limited_loans_end(lab):
    lab.system()
    lab.admin.post("/systems/s1.lab.test/loan", {"recipient": "alice", "duration": "1h"})
    status, reservation = lab.alice.post("/reservations", {"system": "s1.lab.test"})
    assert status == 201 and reservation["end"] == at(START + H)  # defaults to the loan's end
    status, problem = lab.alice.patch(f"/reservations/{reservation['id']}", {"extend_by": "1h"})
    assert status == 422 and "past the end of your loan" in problem["detail"]
    status, problem = lab.alice.post("/reservations", {"system": "s1.lab.test", "start": at(START + H),
                                                        "duration": "2h"})
    assert status == 422
    # the recipient alone cannot extend the loan; an admin can, and then the reservation can follow
    status, problem = lab.alice.patch("/systems/s1.lab.test/loan", {"extend_by": "1h"})
    assert status == 403 and "loan_self" in problem["detail"]
    status, loan = lab.admin.patch("/systems/s1.lab.test/loan", {"extend_by": "1h"})
    assert status == 200 and loan["end"] == at(START + 2 * H)
    status, reservation = lab.alice.patch(f"/reservations/{reservation['id']}", {"extend_by": "1h"})
    assert status == 200 and reservation["end"] == at(START + 2 * H)


def test_loan_self_extends_ones_own_loan(lab):
    lab.system()
    grant_rule(lab, "s1.lab.test", "loan_self", user="alice")
    lab.alice.post("/systems/s1.lab.test/loan", {"recipient": "alice", "duration": "1h"})
    status, loan = lab.alice.patch("/systems/s1.lab.test/loan", {"extend_by": "2h"})
    assert status == 200 and loan["end"] == at(START + 3 * H)


def test_return_loan_with_the_reservation(lab):
    lab.system()
    lab.admin.post("/systems/s1.lab.test/loan", {"recipient": "alice", "duration": "4h"})
    _, reservation = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "1h", "return_loan": True})
    assert reservation["return_loan"] is True
    assert lab.alice.delete(f"/reservations/{reservation['id']}")[0] == 204
    status, _ = lab.alice.get("/systems/s1.lab.test/loan")
    assert status == 404
    _, history = lab.admin.get("/systems/s1.lab.test/loans")
    assert history[0]["return_reason"] == "returned_with_reservation"


def test_return_loan_also_when_the_reservation_expires(lab):
    lab.system()
    lab.admin.post("/systems/s1.lab.test/loan", {"recipient": "alice", "duration": "4h"})
    lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "1h", "return_loan": True})
    run_due(lab.db, START + H)
    assert lab.alice.get("/systems/s1.lab.test/loan")[0] == 404


def test_taking_a_loan_back_returns_the_borrowers_reservation(lab):
    lab.system("auto.lab.test", condition="automated")
    lab.admin.post("/systems/auto.lab.test/loan", {"recipient": "alice"})
    _, reservation = lab.alice.post("/reservations", {"system": "auto.lab.test", "duration": "8h"})
    lab.clock.advance(hours=1)
    status, problem = lab.bob.delete("/systems/auto.lab.test/loan")
    assert status == 403
    assert lab.admin.delete("/systems/auto.lab.test/loan")[0] == 204
    _, reservation = lab.alice.get(f"/reservations/{reservation['id']}")
    assert reservation["state"] == "returned" and reservation["returned_at"] == at(START + H)
    _, log = lab.alice.get(f"/reservations/{reservation['id']}/activity")
    assert any(e["action"] == "loan_ended" and "lost access" in (e["new"] or "") for e in log)
    # a manual system's reservation stays: the borrower keeps the right to reserve it
    lab.system("m.lab.test")
    lab.admin.post("/systems/m.lab.test/loan", {"recipient": "bob"})
    _, kept = lab.bob.post("/reservations", {"system": "m.lab.test", "duration": "8h"})
    lab.admin.delete("/systems/m.lab.test/loan")
    assert lab.bob.get(f"/reservations/{kept['id']}")[1]["state"] == "active"


def test_worker_expires_a_loan_and_cascades(lab):
    lab.system("auto.lab.test", condition="automated")
    lab.admin.post("/systems/auto.lab.test/loan", {"recipient": "alice", "duration": "1h"})
    _, reservation = lab.alice.post("/reservations", {"system": "auto.lab.test"})
    assert reservation["end"] == at(START + H)
    lab.admin.patch("/systems/auto.lab.test/loan", {"end": at(START + 30 * timedelta(minutes=1))})
    run_due(lab.db, START + 30 * timedelta(minutes=1))
    lab.clock.advance(minutes=30)
    assert lab.alice.get("/systems/auto.lab.test/loan")[0] == 404
    _, reservation = lab.alice.get(f"/reservations/{reservation['id']}")
    assert reservation["state"] == "returned" and reservation["returned_at"] == at(START + 30 * timedelta(minutes=1))


def test_loan_changes_are_in_the_activity_log(lab):
    lab.system()
    lab.admin.post("/systems/s1.lab.test/loan", {"recipient": "alice", "duration": "1h"})
    lab.admin.patch("/systems/s1.lab.test/loan", {"extend_by": "1h"})
    lab.alice.delete("/systems/s1.lab.test/loan")
    _, log = lab.admin.get("/systems/s1.lab.test/activity")
    actions = [e["action"] for e in reversed(log)]
    assert actions[-3:] == ["lent", "loan_extended", "loan_returned"]


def _notices(lab, user):
    from lablease.store.tables import Outbox
    from lablease.store.uow import UnitOfWork

    with UnitOfWork(lab.db, write=False) as uow:
        return [row.payload for row in uow.session.query(Outbox).order_by(Outbox.id) if row.payload["user"] == user]


def test_lending_a_system_another_user_holds_is_refused_unless_forced(db, tmp_path):
    from lablease.config import Settings

    from .conftest import Lab

    lab = Lab(db, Settings(data_dir=str(tmp_path / "data"), smtp_host="127.0.0.1"))
    lab.system()
    lab.alice.patch("/me", {"email": "alice@lab.test"})
    _, held = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "2h"})
    _, later = lab.admin.post("/reservations", {"system": "s1.lab.test", "start": at(START + 5 * H), "duration": "1h"})
    status, problem = lab.admin.post("/systems/s1.lab.test/loan", {"recipient": "bob"})
    assert status == 409, problem
    assert problem["detail"].startswith(f"s1.lab.test is reserved by alice until {at(START + 2 * H)} "
                                        f"(reservation {held['id']}) (and 1 more")
    assert "force=true" in problem["detail"]
    assert [(r["id"], r["user"]) for r in problem["reservations"]] == [(held["id"], "alice"), (later["id"], "admin")]
    assert lab.admin.get("/systems/s1.lab.test/loan")[0] == 404  # nothing lent
    assert _notices(lab, "alice") == []
    status, loan = lab.admin.post("/systems/s1.lab.test/loan?force=true", {"recipient": "bob"})
    assert status == 201 and loan["recipient"] == "bob", loan
    _, returned = lab.alice.get(f"/reservations/{held['id']}")
    assert returned["state"] == "returned" and returned["returned_at"] == at(START)
    [told] = _notices(lab, "alice")
    assert told["event"] == "reservation.returned" and told["reservation"] == held["id"]
    assert told["reason"] == "the system was lent to another user"
    assert lab.admin.get(f"/reservations/{later['id']}")[1]["state"] == "returned"
    status, mine = lab.bob.post("/reservations", {"system": "s1.lab.test", "duration": "1h"})
    assert status == 201, mine  # the recipient can use the loan


def test_the_recipients_own_reservation_does_not_stop_a_loan_and_force_may_come_in_the_body(lab):
    lab.system()
    lab.system("s2.lab.test")
    assert lab.bob.post("/reservations", {"system": "s1.lab.test", "duration": "2h"})[0] == 201
    assert lab.admin.post("/systems/s1.lab.test/loan", {"recipient": "bob"})[0] == 201
    _, held = lab.alice.post("/reservations", {"system": "s2.lab.test", "duration": "2h"})
    status, loan = lab.admin.post("/systems/s2.lab.test/loan", {"recipient": "bob", "force": True})
    assert status == 201, loan
    assert lab.alice.get(f"/reservations/{held['id']}")[1]["state"] == "returned"


def test_forcing_a_loan_over_a_running_recipe_aborts_it(lab):
    lab.system("a.lab.test", condition="automated")
    status, job = lab.alice.post("/jobs", {"recipe_sets": [{"recipes": [
        {"force": "a.lab.test", "reservesys": {"duration": "1d"}}]}]})
    assert status == 201, job
    recipe = job["recipe_sets"][0]["recipes"][0]
    assert recipe["status"] == "running"
    status, problem = lab.admin.post("/systems/a.lab.test/loan", {"recipient": "bob"})
    assert status == 409 and "reserved by alice" in problem["detail"], problem
    assert lab.admin.post("/systems/a.lab.test/loan?force=true", {"recipient": "bob"})[0] == 201
    _, recipe = lab.alice.get(f"/recipes/{recipe['id']}")
    assert recipe["status"] == "aborted"
    _, reservations = lab.admin.get("/reservations", system="a.lab.test", active="true")
    assert reservations == []  # not kept for alice (reservesys) either: the system is bob's now
    assert lab.bob.post("/reservations", {"system": "a.lab.test", "duration": "1h"})[0] == 201
