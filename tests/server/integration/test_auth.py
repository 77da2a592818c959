"""401 for a missing, unknown, revoked or expired token."""
from datetime import timedelta

from lablease.services.people import users
from lablease.store.uow import UnitOfWork


def test_missing_unknown_and_malformed_tokens(lab):
    status, problem = lab.anonymous().get("/systems")
    assert status == 401 and "needs an API token" in problem["detail"]
    response = lab.client.get("/api/v1/systems", headers={"Authorization": "Bearer llt_nope"})
    assert response.status_code == 401 and response.get_json()["detail"] == "the API token is not known"
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    response = lab.client.get("/api/v1/systems", headers={"Authorization": "Basic abc"})
    assert response.status_code == 401


def test_revoked_and_expired_tokens(lab):
    with UnitOfWork(lab.db) as uow:
        short = users.create_token(uow, lab.clock(), "alice", "short", lab.clock() + timedelta(hours=1))
        uow.commit()
    headers = {"Authorization": f"Bearer {short}"}
    assert lab.client.get("/api/v1/me", headers=headers).get_json()["name"] == "alice"
    lab.clock.advance(hours=2)
    response = lab.client.get("/api/v1/me", headers=headers)
    assert response.status_code == 401 and response.get_json()["detail"] == "the API token has expired"

    with UnitOfWork(lab.db) as uow:
        assert users.revoke_tokens(uow, lab.clock(), "bob") == 1
        uow.commit()
    status, problem = lab.bob.get("/me")
    assert status == 401 and problem["detail"] == "the API token was revoked"


def test_tokens_are_stored_hashed(lab):
    from sqlalchemy import select

    from lablease.store.tables import Token

    with UnitOfWork(lab.db, write=False) as uow:
        stored = list(uow.session.execute(select(Token.token_hash)).scalars())
    assert lab.tokens["alice"] not in stored
    assert users.hash_token(lab.tokens["alice"]) in stored


def test_health_and_openapi_need_no_token(lab):
    assert lab.anonymous().get("/health") == (200, {"status": "ok"})
    assert lab.client.get("/health").status_code == 200
    status, spec = lab.anonymous().get("/openapi.json")
    assert status == 200 and spec["openapi"].startswith("3.1")


def test_me_shows_the_sites_rules(lab):
    status, me = lab.alice.get("/me")
    assert status == 200 and me["name"] == "alice" and me["admin"] is False
    assert me["site"] == {"default_reservation_duration": "P1D", "max_reservation_duration": None,
                          "allow_unlimited_reservations": False, "default_loan_duration": "P7D"}
