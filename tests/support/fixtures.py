"""pytest fixtures shared by tests/server and tests/e2e (imported by their conftest.py).

`database_url` is parametrised over SQLite and PostgreSQL: each test gets a
fresh database on the Alembic-migrated schema (copied from a template that
is migrated once per session). Without PostgreSQL binaries the PostgreSQL
cases skip, except under CI, where they fail.
"""
from __future__ import annotations

import itertools
import logging
import os
import shutil

import pytest

from .live import LiveServer
from .postgres import ThrowawayPostgres, find_bindir

_counter = itertools.count()
# The SMTP receivers' (aiosmtpd) thread logs every connection at INFO, at moments of its own: late lines went to
# whatever stream the root logger had then, sometimes one pytest had closed ("--- Logging error ---" in CI).
logging.getLogger("mail.log").setLevel(logging.WARNING)


@pytest.fixture(autouse=True)
def root_logging_restored():
    """A test that runs `lablease-server` in-process points the root logger at that test's captured stderr
    (observe/logs.configure: a handler with lablease's redacting filter, which also takes the traceback off
    each record it writes). Take that handler off again: left behind, it writes later tests' log lines to a
    closed stream and hides their tracebacks from caplog. pytest adds and removes its own handlers itself.
    (Named without a leading underscore: the conftests' `import *` would not bring it in.)"""
    from lablease.observe.logs import Redacting

    root = logging.getLogger()
    level = root.level
    yield
    for handler in list(root.handlers):
        if any(isinstance(kept, Redacting) for kept in handler.filters):
            root.removeHandler(handler)
    root.setLevel(level)


@pytest.fixture(scope="session")
def postgres():
    if find_bindir() is None:
        if os.environ.get("CI"):
            pytest.fail("PostgreSQL binaries are missing under CI: `make test` installs them (scripts/ensure-postgresql.sh)")
        pytest.skip("PostgreSQL binaries not installed (run scripts/ensure-postgresql.sh)")
    server = ThrowawayPostgres().start()
    yield server
    server.stop()


@pytest.fixture(scope="session")
def pg_template(postgres):
    from lablease.store.db import Database
    from lablease.store.migrate import upgrade

    url = postgres.create_database("lablease_template")
    db = Database(url)
    upgrade(db)
    db.dispose()
    return "lablease_template"


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory):
    from lablease.store.db import Database
    from lablease.store.migrate import upgrade

    path = tmp_path_factory.mktemp("template") / "template.db"
    db = Database(f"sqlite:///{path}")
    upgrade(db)
    db.dispose()
    return path


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request, tmp_path):
    """A fresh, migrated database of each kind."""
    if request.param == "sqlite":
        path = tmp_path / "lablease.db"
        shutil.copy(request.getfixturevalue("sqlite_template"), path)
        return f"sqlite:///{path}"
    postgres = request.getfixturevalue("postgres")
    template = request.getfixturevalue("pg_template")
    return postgres.create_database(f"t{os.getpid()}_{next(_counter)}", template)


@pytest.fixture
def db(database_url):
    from lablease.store.db import Database

    database = Database(database_url)
    yield database
    database.dispose()


@pytest.fixture
def live_server(tmp_path, database_url):
    """A real `lablease-server serve` on a migrated database, with an `admin` user."""
    server = LiveServer(tmp_path / "data", database_url).start()
    yield server
    server.stop()
