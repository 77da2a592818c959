"""The pages through the in-process application (werkzeug's test client keeps the cookies, as a browser does)."""
import re
import shutil

import pytest
from werkzeug.test import Client

from lablease.config import Settings
from lablease.services.auth import signin
from lablease.store.uow import UnitOfWork
from tests.server.integration.conftest import Lab

PASSWORD = "correct horse battery"
CSRF = re.compile(r'name="csrf" value="([0-9a-f]+)"')


class Person:
    """One person's browser: their own cookies; forms posted with the CSRF token of the page they came from."""

    def __init__(self, lab: Lab, name: str | None):
        self.lab, self.name = lab, name
        self.client = Client(lab.app)
        self.csrf = None

    def get(self, path: str, **kw):
        response = self.client.get(path, **kw)
        found = CSRF.search(response.get_data(as_text=True))
        self.csrf = found.group(1) if found else self.csrf
        return response

    def page(self, path: str) -> str:
        response = self.get(path)
        assert response.status_code == 200, (path, response.status_code, response.get_data(as_text=True)[:500])
        return response.get_data(as_text=True)

    def post(self, path: str, fields: dict | None = None, csrf: str | None = "page"):
        data = dict(fields or {})
        if csrf is not None:
            data["csrf"] = self.csrf if csrf == "page" else csrf
        return self.client.post(path, data=data)

    def follow(self, response) -> str:
        assert response.status_code == 303, (response.status_code, response.get_data(as_text=True)[:500])
        return self.page(response.headers["Location"])

    def sign_in(self, password: str = PASSWORD):
        self.get("/login")
        response = self.post("/login", {"username": self.name, "password": password})
        if response.status_code == 303:
            self.get(response.headers["Location"])  # as a browser does: the landing page's forms carry the new token
        return response


@pytest.fixture
def database_url(tmp_path, sqlite_template):
    """SQLite only: the pages add no SQL of their own that differs by database (services are tested on both),
    and each sign-in costs an argon2 hash: the tier stays fast."""
    path = tmp_path / "lablease.db"
    shutil.copy(sqlite_template, path)
    return f"sqlite:///{path}"


@pytest.fixture
def web(db, tmp_path):
    lab = Lab(db, Settings(data_dir=str(tmp_path / "data")))
    lab.passwords = set()
    return lab


def give_password(lab: Lab, name: str, password: str = PASSWORD) -> None:
    with UnitOfWork(lab.db) as uow:
        signin.set_password(uow, lab.clock(), name, password)
        uow.commit()
    lab.passwords.add(name)


@pytest.fixture
def person(web):
    """person("alice") is alice's browser, signed in (her password set on first use)."""
    def make(name: str | None, signed_in: bool = True) -> Person:
        if name in ("admin", "alice", "bob") and name not in web.passwords:
            give_password(web, name)
        who = Person(web, name)
        if signed_in:
            assert who.sign_in().status_code == 303
        return who
    return make
