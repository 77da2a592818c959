"""A password that passed its argon2id check is not checked again for a while (`bkr` signs in for every
command), but a wrong one always is, and a changed password or a disabled user applies at once
(services/people/verified_passwords.py; docs/access.md, "Passwords"). Through Beaker's auth.login_password."""
import xmlrpc.client

import pytest
from argon2 import PasswordHasher

from lablease.config import Settings
from lablease.services.auth import signin
from lablease.services.people import users
from lablease.store.uow import UnitOfWork

from .conftest import START, Lab

FIRST, SECOND = "a long enough first password", "a long enough second password"


class CountingHasher(PasswordHasher):
    """argon2id as signin uses it, counting the checks it runs."""

    checks = 0

    def verify(self, hash, password):  # noqa: A002 - argon2's own parameter name
        CountingHasher.checks += 1
        return super().verify(hash, password)


@pytest.fixture
def hasher(monkeypatch):
    CountingHasher.checks = 0
    monkeypatch.setattr(signin, "_HASHER", CountingHasher())
    monkeypatch.setattr(signin, "_VERIFIED", signin.VerifiedPasswords())  # nothing remembered by other tests
    return CountingHasher


def login(lab, name: str, password: str) -> str:
    """auth.login_password on a fresh client: the user name, or the fault's text."""
    from werkzeug.test import Client

    response = Client(lab.app).post("/bkr/client/", content_type="text/xml", data=xmlrpc.client.dumps(
        (name, password, None), "auth.login_password", allow_none=True))
    assert response.status_code == 200
    try:
        return xmlrpc.client.loads(response.get_data())[0][0]
    except xmlrpc.client.Fault as fault:
        return fault.faultString


def set_password(lab, password: str) -> None:
    with UnitOfWork(lab.db) as uow:
        signin.set_password(uow, START, "alice", password)
        uow.commit()


def test_a_password_that_passed_is_not_checked_again_and_a_wrong_one_always_is(lab, hasher):
    set_password(lab, FIRST)
    assert [login(lab, "alice", FIRST) for _ in range(3)] == ["alice"] * 3
    assert hasher.checks == 1
    for _ in range(2):
        assert "wrong password" in login(lab, "alice", FIRST + "x")
    assert hasher.checks == 3


def test_a_changed_password_and_a_disabled_user_apply_at_once(lab, hasher):
    set_password(lab, FIRST)
    assert login(lab, "alice", FIRST) == "alice"
    set_password(lab, SECOND)
    assert "wrong password" in login(lab, "alice", FIRST)
    assert login(lab, "alice", SECOND) == "alice"
    assert login(lab, "alice", SECOND) == "alice"
    with UnitOfWork(lab.db) as uow:
        users.set_disabled(uow, START, "alice", True)
        uow.commit()
    assert "wrong password" in login(lab, "alice", SECOND)


def test_a_site_may_check_every_sign_in(db, tmp_path, hasher):
    lab = Lab(db, Settings(data_dir=str(tmp_path / "data"), password_cache_seconds=""))
    set_password(lab, FIRST)
    assert [login(lab, "alice", FIRST) for _ in range(3)] == ["alice"] * 3
    assert hasher.checks == 3
