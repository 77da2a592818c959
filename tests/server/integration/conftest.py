"""An in-process API over a fresh migrated database (SQLite and PostgreSQL), with a frozen clock."""
from datetime import datetime, timedelta, timezone

import pytest
from werkzeug.test import Client

from lablease.api import create_app
from lablease.config import Settings
from lablease.services.people import users
from lablease.store.uow import UnitOfWork
from tests.support.contract import check_answer

START = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)


class FrozenClock:
    def __init__(self, now=START):
        self.now = now

    def __call__(self):
        return self.now

    def advance(self, **delta):
        self.now += timedelta(**delta)
        return self.now


class Caller:
    """One user's view of the API: JSON in, (status, JSON) out."""

    def __init__(self, client: Client, token: str | None):
        self.client = client
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}

    def call(self, method, path, json=None, **kw):
        response = self.client.open("/api/v1" + path, method=method, json=json, headers=self.headers, **kw)
        body = response.get_json(silent=True) if response.data else None
        check_answer(method, path, response.status_code, response.mimetype, body)  # as /openapi.json says
        return response.status_code, body

    def get(self, path, **kw):
        return self.call("GET", path, query_string=kw or None)

    def post(self, path, json=None):
        return self.call("POST", path, json)

    def patch(self, path, json=None):
        return self.call("PATCH", path, json)

    def put(self, path, json=None):
        return self.call("PUT", path, json)

    def delete(self, path, **kw):
        return self.call("DELETE", path, query_string=kw or None)


class Lab:
    def __init__(self, db, settings=None):
        self.clock = FrozenClock()
        self.settings = settings or Settings()
        self.db = db
        self.app = create_app(self.settings, db, self.clock)
        self.client = Client(self.app)
        self.tokens = {}
        self.admin = self.user("admin", admin=True)
        self.alice = self.user("alice")
        self.bob = self.user("bob")

    def user(self, name, admin=False):
        with UnitOfWork(self.db) as uow:
            _, token = users.add_user(uow, self.clock(), name, admin)
            uow.commit()
        self.tokens[name] = token
        return Caller(self.client, token)

    def in_arusers(self, name: str) -> None:
        """The arusers group exists and `name` is in it: they may ask for advance reservations."""
        with UnitOfWork(self.db) as uow:
            users.ensure_arusers(uow, START)
            uow.commit()
        status, _ = self.admin.post("/groups/arusers/members", {"user": name})
        assert status == 200

    def anonymous(self):
        return Caller(self.client, None)

    def system(self, fqdn="s1.lab.test", **fields):
        status, body = self.admin.post("/systems", {"fqdn": fqdn, "arch": "x86_64", "condition": "manual", **fields})
        assert status == 201, body
        return body


@pytest.fixture
def lab(db, tmp_path):
    return Lab(db, Settings(data_dir=str(tmp_path / "data")))


def at(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")
