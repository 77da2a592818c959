"""Idempotency-Key on every writing POST: a retry gets the first answer, never a second object."""
import json
import stat
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta

import pytest
from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from lablease.config import Settings
from lablease.domain.idempotency import body_hash
from lablease.services.people import users
from lablease.store.tables import User
from lablease.store.idempotency_tables import IdempotencyRecord
from lablease.store.uow import UnitOfWork
from lablease.worker.loop import Worker

from tests.support.contract import check_answer

from .conftest import START, Lab, at


@pytest.fixture
def lab(db, tmp_path):
    settings = Settings(data_dir=str(tmp_path / "data"))
    settings.power_scripts_path.mkdir(parents=True)
    script = settings.power_scripts_path / "record"
    script.write_text("#!/bin/sh\nexit 0\n")
    script.chmod(stat.S_IRWXU)
    lab = Lab(db, settings)
    with UnitOfWork(db) as uow:
        users.ensure_arusers(uow, START)
        uow.commit()
    lab.admin.post("/groups/arusers/members", {"user": "admin"})
    lab.system("s1.lab.test", condition="automated",
               power={"driver": "command", "script": "record", "address": "pdu", "user": "ops", "password": "x"})
    lab.system("s2.lab.test", condition="automated")
    return lab


def send(lab, path, body, key, user="admin", method="POST"):
    """(status, JSON, replayed?) of a request sent with an Idempotency-Key."""
    headers = {"Authorization": f"Bearer {lab.tokens[user]}"}
    if key is not None:
        headers["Idempotency-Key"] = key
    response = lab.client.open("/api/v1" + path, method=method, json=body, headers=headers)
    answer = response.get_json(silent=True) if response.data else None
    check_answer(method, path, response.status_code, response.mimetype, answer)
    return response.status_code, answer, response.headers.get("Idempotent-Replayed")


def count(lab, path):
    return len(lab.admin.get(path)[1])


CREATES = [
    ("/pools", {"name": "gpu", "description": "GPUs"}, "/pools"),
    ("/systems/s2.lab.test/loan", {"recipient": "alice"}, "/systems/s2.lab.test/loans"),
    ("/advance-reservations", {"start": at(START + timedelta(hours=1)), "duration": "2h", "count": 1},
     "/advance-reservations"),
    ("/systems/s1.lab.test/power", {"action": "on"}, "/systems/s1.lab.test/commands"),
]


@pytest.mark.parametrize("path, body, listing", CREATES, ids=["pool", "loan", "advance-reservation", "power"])
def test_a_create_sent_again_with_its_key_answers_the_first_object_and_makes_no_other(lab, path, body, listing):
    before = count(lab, listing)
    status, first, replayed = send(lab, path, body, "retry-1")
    assert status in (201, 202) and replayed is None, first  # a power command is accepted (202)
    again_status, again, replayed = send(lab, path, dict(reversed(body.items())), "retry-1")  # other key order
    assert (again_status, again, replayed) == (status, first, "true")
    assert count(lab, listing) == before + 1


def test_the_same_key_with_another_body_or_path_is_refused_naming_what_differs(lab):
    assert send(lab, "/pools", {"name": "gpu"}, "k")[0] == 201
    status, problem, _ = send(lab, "/pools", {"name": "cpu"}, "k")
    assert status == 409 and problem["type"] == "urn:lablease:problem:idempotency-key-reused"
    assert problem["differs"] == ["body"] and "'k'" in problem["detail"]
    status, problem, _ = send(lab, "/systems/s2.lab.test/loan", {"recipient": "alice"}, "k")
    assert status == 409 and problem["differs"][0].startswith("method and path (first POST /api/v1/pools, now POST")
    assert [p["name"] for p in lab.admin.get("/pools")[1]] == ["gpu"]
    assert lab.admin.get("/systems/s2.lab.test/loans")[1] == []


def test_keys_are_each_users_own(lab):
    assert send(lab, "/pools", {"name": "gpu"}, "k")[0] == 201
    status, problem, _ = send(lab, "/pools", {"name": "gpu"}, "k", user="alice")
    assert status == 409 and problem["type"] != "urn:lablease:problem:idempotency-key-reused"  # the name is taken


@pytest.mark.parametrize("key", ["", " ", "x" * 129, "naïve", "tab\there"])
def test_a_key_that_cannot_be_one_is_refused_and_nothing_is_made(lab, key):
    status, problem, _ = send(lab, "/pools", {"name": "gpu"}, key)
    assert status == 422 and problem["field"] == "Idempotency-Key", problem
    assert lab.admin.get("/pools")[1] == []


def test_a_refusal_is_not_kept_so_the_request_is_judged_again(lab):
    status, problem, _ = send(lab, "/systems/s2.lab.test/loan", {"recipient": "nobody"}, "loan-1")
    assert status == 422 and problem["detail"] == "recipient: no user named nobody", problem
    lab.user("nobody")
    status, loan, replayed = send(lab, "/systems/s2.lab.test/loan", {"recipient": "nobody"}, "loan-1")
    assert status == 201 and replayed is None and loan["recipient"] == "nobody"


def test_reserve_takes_the_key_as_its_request_id(lab):
    status, first, _ = send(lab, "/reservations", {"system": "s2.lab.test", "duration": "1h"}, "r-1")
    assert status == 201 and first["request_id"] == "r-1"
    status, again, _ = send(lab, "/reservations", {"system": "s2.lab.test", "duration": "1h"}, "r-1")
    assert status == 200 and again["id"] == first["id"]  # reserve's own rule: 200 with the reservation
    status, problem, _ = send(lab, "/reservations", {"system": "s2.lab.test", "duration": "1h", "request_id": "r-2"},
                              "r-1")
    assert status == 422 and problem["field"] == "Idempotency-Key"


def records(lab):
    with UnitOfWork(lab.db, write=False) as uow:
        return uow.session.execute(select(func.count()).select_from(IdempotencyRecord)).scalar_one()


def test_the_worker_deletes_answers_kept_longer_than_idempotency_keep(lab):
    send(lab, "/pools", {"name": "gpu"}, "old")
    worker = Worker(lab.settings, lab.db, lab.clock)
    lab.clock.advance(hours=23)
    send(lab, "/pools", {"name": "cpu"}, "new")
    worker.prune_if_due()
    assert records(lab) == 2
    lab.clock.advance(hours=1, minutes=10)
    worker.prune_if_due()
    assert records(lab) == 1
    # the old key is free again: the same request makes... a pool named gpu again, refused as a name taken
    status, problem, replayed = send(lab, "/pools", {"name": "gpu"}, "old")
    assert status == 409 and replayed is None and "gpu" in problem["detail"]
    assert send(lab, "/pools", {"name": "cpu"}, "new")[2] == "true"


def test_two_requests_at_once_with_one_key_make_one_answer_and_the_loser_keeps_nothing(lab):
    """PostgreSQL, where two transactions really overlap: another request holding the key (its record inserted,
    not yet committed) makes this one wait at its own insert; once the other commits, this one's writes are
    rolled back and it answers with the other's record."""
    if not lab.db.is_postgresql:
        pytest.skip("SQLite runs one writing transaction at a time: the second reads the first's record")
    body = {"name": "gpu"}
    with Session(lab.db.writer) as other:
        admin = other.execute(select(User.id).where(User.name == "admin")).scalar_one()
        won = lab.admin.post("/pools", {"name": "won"})[1]  # an answer, told apart from what this request makes
        other.add(IdempotencyRecord(user_id=admin, key="both", method="POST", path="/api/v1/pools",
                                    body_hash=body_hash(json.dumps(body).encode(), True), status=201,
                                    mimetype="application/json", answer=json.dumps(won), created_at=START))
        other.flush()
        with ThreadPoolExecutor(1) as pool:
            answer = pool.submit(send, lab, "/pools", body, "both")
            until(lambda: waiting_on_a_lock(lab) or answer.done())
            other.commit()
            status, got, replayed = answer.result(timeout=30)
    assert (status, got, replayed) == (201, won, "true")
    assert [p["name"] for p in lab.admin.get("/pools")[1]] == ["won"]  # the loser's gpu was rolled back with it


def waiting_on_a_lock(lab) -> bool:
    with lab.db.writer.connect() as connection:
        return connection.execute(text("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                                       "AND datname = current_database()")).scalar_one() > 0


def until(check, seconds: float = 30):
    """check()'s first true value, asked every 0.05 s for at most `seconds` (awaited, not a sleep)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.05)
    raise AssertionError(f"not within {seconds} s")
