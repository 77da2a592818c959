"""`lablease-server init` upgrades a database of every earlier revision, keeping its data; downgrades and
databases newer than the code are refused with what to do.

The revisions are walked from Alembic's script directory, so a new migration is covered without editing
this file; SEEDS says which rows to write at the revision that first allows them (a newer revision needs
an entry only when it adds a table worth carrying). Each database is made at revision R, given the rows
of every revision up to R, upgraded by `init`, and then read back row by row and through the API.
"""
from __future__ import annotations

import itertools
import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest
from sqlalchemy import Column, MetaData, Table, select, text
from werkzeug.test import Client

from lablease.api import create_app
from lablease.cli.server import main
from lablease.config import Settings
from lablease.services.people.users import hash_token
from lablease.store import migrate
from lablease.store.db import Database
from lablease.store.secrets import SecretBox, SecretJson, SecretText, use_secrets
from lablease.store.tables import Base
from tests.server.integration.conftest import Caller

T0 = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)
T1 = datetime(2026, 1, 5, 17, 0, tzinfo=timezone.utc)
TOKEN = "upgrade-test-token-of-ann"
SYSTEM = {"driver": "ipmitool", "address": "bmc-a.lab.test", "password": "bmc-secret"}  # plain, as before 0009

SEEDS: dict[str, list[tuple[str, dict]]] = {
    "0001": [
        ("users", {"id": 1, "name": "ann", "is_admin": True, "disabled": False, "created_at": T0}),
        ("users", {"id": 2, "name": "bob", "is_admin": False, "disabled": False, "created_at": T0}),
        ("groups", {"id": 1, "name": "lab-team", "created_at": T0}),
        ("group_members", {"group_id": 1, "user_id": 2, "is_owner": True}),
        ("tokens", {"id": 1, "user_id": 1, "name": "ci", "token_hash": hash_token(TOKEN), "created_at": T0}),
        ("resources", {"id": 1, "kind": "system", "name": "a.lab.test", "capacity": 1}),
        ("systems", {"id": 1, "resource_id": 1, "fqdn": "a.lab.test", "arch": "x86_64", "attributes": {"gpu": ["a100"]},
                     "condition": "automated", "usage": "idle", "power": SYSTEM, "netboot": {}, "created_at": T0}),
        ("access_rules", {"id": 1, "system_id": 1, "permission": "reserve", "user_id": 2}),
        ("bookings", {"id": 1, "resource_id": 1, "start_at": T0, "end_at": T1, "quantity": 1, "exclusive": True,
                      "kind": "reservation", "user_id": 1, "created_at": T0}),
        ("reservations", {"id": 1, "system_id": 1, "user_id": 1, "booking_id": 1, "kind": "manual", "start_at": T0,
                          "end_at": T1, "return_loan": False, "request_id": "ci-42", "created_at": T0}),
    ],
    "0002": [
        ("pools", {"id": 1, "name": "gpus", "created_at": T0}),
        ("pool_systems", {"pool_id": 1, "system_id": 1}),
        ("loans", {"id": 1, "system_id": 1, "recipient_id": 2, "lender_id": 1, "start_at": T0, "end_at": T1,
                   "comment": "for the demo", "created_at": T0}),
        ("outbox", {"id": 1, "channel": "mail", "destination": "bob@lab.test", "subject": "ending", "payload": {"n": 1},
                    "dedupe_key": "warn-1", "status": "sent", "attempts": 1, "created_at": T0}),
    ],
    "0003": [
        ("distro_trees", {"id": 1, "name": "Fedora-40", "arch": "x86_64", "tags": ["released"], "url": "http://m/f40/",
                          "kernel": "vmlinuz", "initrd": "initrd.img", "labs": [], "created_at": T0}),
        ("jobs", {"id": 1, "owner_id": 2, "whiteboard": "nightly", "status": "completed", "result": "pass",
                  "submitted_at": T0}),
    ],
    "0006": [
        ("installations", {"id": 1, "system_id": 1, "user_id": 1, "distro_tree_id": 1, "distro": {"name": "Fedora-40"},
                           "ks_meta": "", "kernel_options": "", "kickstart": "# ks", "nonce": "n1",
                           "status": "completed", "created_at": T0}),
        ("commands", {"id": 1, "system_id": 1, "action": "on", "status": "completed", "user_id": 1,
                      "installation_id": 1, "attempts": 1, "due_at": T0, "created_at": T0}),
    ],
    "0010": [
        ("worker_failures", {"kind": "expiry", "item_id": 7, "error": "boom", "failed_at": T0}),
    ],
    "0018": [  # carried through the revisions that follow it (none while it is the newest)
        ("health_checks", {"id": 1, "name": "smoke", "scope": "arch", "target": "x86_64", "job": {"recipe_sets": []},
                           "source": "<job/>", "every_seconds": 86400, "after_recipes": None, "owner_id": 1,
                           "created_at": T0}),
        ("system_health", {"id": 1, "system_id": 1, "state": "good", "since": T0, "result": "health check smoke passed",
                           "last_check_at": T0, "passed_at": T0, "recipes_since": 2, "forced": False,
                           "next_check_at": T1, "check_id": 1, "recipe_id": None}),
    ],
}
_names = itertools.count()


def chain() -> list[str]:
    """Every revision from the first to the newest, as Alembic's script directory holds them."""
    return [script.revision for script in reversed(list(migrate.scripts().walk_revisions()))]


EARLIER = chain()[:-1]


def seeds_up_to(revision: str) -> list[tuple[str, dict]]:
    order = chain()
    return [row for rev, rows in SEEDS.items() if order.index(rev) <= order.index(revision) for row in rows]


def subset(name: str, row: dict) -> Table:
    """The head model's table cut down to the columns a row names (older schemas lack the others)."""
    model = Base.metadata.tables[name]
    return Table(name, MetaData(), *(Column(c.name, c.type, primary_key=c.primary_key)
                                     for c in model.columns if c.name in row))


def plain(table: Table) -> Table:
    """The same columns with secrets unsealed: rows as a version before 0009 wrote them."""
    def unsealed(kind):
        return kind.impl_instance if isinstance(kind, (SecretJson, SecretText)) else kind

    return Table(table.name, MetaData(), *(Column(c.name, unsealed(c.type), primary_key=c.primary_key)
                                           for c in table.columns))


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'lablease.db'}"
    return request.getfixturevalue("postgres").create_database(f"up{next(_names)}")


@pytest.fixture
def site(empty_url, tmp_path, monkeypatch):
    """The environment `lablease-server` reads: this database and a data directory."""
    settings, db = _site(empty_url, tmp_path, monkeypatch)
    yield settings, db
    db.dispose()


def _site(url: str, tmp_path, monkeypatch) -> tuple[Settings, Database]:
    monkeypatch.setenv("LABLEASE_DATABASE_URL", url)
    monkeypatch.setenv("LABLEASE_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.delenv("LABLEASE_CONFIG", raising=False)
    settings = Settings(data_dir=str(tmp_path / "data"), database_url=url)
    db = Database(url)
    use_secrets(db, SecretBox(settings))
    return settings, db


# A database at each earlier revision is a copy of one made once per run, walking the chain a revision at a
# time (a SQLite file; a PostgreSQL template database): each test then migrates only from its revision on.
@pytest.fixture(scope="session")
def sqlite_revisions(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("revisions")
    db, copies = Database(f"sqlite:///{root / 'walk.db'}"), {}
    try:
        for revision in EARLIER:
            migrate.upgrade(db, revision)
            db.dispose()  # every connection closed: the file holds the whole database
            copies[revision] = Path(shutil.copy(root / "walk.db", root / f"{revision}.db"))
    finally:
        db.dispose()
    return copies


@pytest.fixture(scope="session")
def pg_revisions(postgres) -> dict[str, str]:
    db, templates = Database(postgres.create_database("revisions_walk")), {}
    try:
        for revision in EARLIER:
            migrate.upgrade(db, revision)
            db.dispose()  # a template database may have no connection while it is copied
            postgres.create_database(f"revision_{revision}", "revisions_walk")
            templates[revision] = f"revision_{revision}"
    finally:
        db.dispose()
    return templates


@pytest.fixture(params=["sqlite", "postgresql"])
def site_at(request, tmp_path, monkeypatch):
    """site_at(revision): the environment of `site`, its database a copy of one at that revision."""
    made = []

    def make(revision: str) -> tuple[Settings, Database]:
        if request.param == "sqlite":
            path = tmp_path / "lablease.db"
            shutil.copy(request.getfixturevalue("sqlite_revisions")[revision], path)
            url = f"sqlite:///{path}"
        else:
            url = request.getfixturevalue("postgres").create_database(
                f"up{next(_names)}", request.getfixturevalue("pg_revisions")[revision])
        made.append(_site(url, tmp_path, monkeypatch))
        return made[-1]

    yield make
    for _, db in made:
        db.dispose()


def test_the_chain_has_revisions_to_upgrade_from():
    assert len(EARLIER) >= 9 and chain()[-1] == migrate.head_revision()


@pytest.mark.parametrize("revision", EARLIER)
def test_init_upgrades_a_database_of_each_earlier_revision_and_keeps_its_data(site_at, revision, capsys):
    settings, db = site_at(revision)
    assert migrate.current_revision(db) == revision
    rows = seeds_up_to(revision)
    with db.writer.begin() as connection:
        for name, row in rows:
            connection.execute(plain(subset(name, row)).insert().values(row))
        if db.is_postgresql:  # the rows came with their ids: move the sequences past them, as inserts would
            for name in {name for name, row in rows if "id" in row}:
                connection.execute(text(f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), max(id)) FROM {name}"))

    assert main(["init"]) == 0
    assert f"database migrated at revision {migrate.head_revision()}" in capsys.readouterr().out

    with db.reader.connect() as connection:
        for name, row in rows:
            table = subset(name, row)
            keys = [c for c in table.columns if c.primary_key]
            found = connection.execute(select(table).where(*(c == row[c.name] for c in keys))).mappings().one_or_none()
            assert found is not None and dict(found) == row, (name, row, found)
        sealed = connection.execute(text("SELECT power FROM systems WHERE id = 1")).scalar_one()
    assert "bmc-secret" not in str(sealed)  # init sealed the password an older version stored in plain text
    ann = Caller(Client(create_app(settings, db)), TOKEN)  # the old token still signs in; its data reads back
    status, reservation = ann.get("/reservations/1")
    assert status == 200 and reservation["system"] == "a.lab.test" and reservation["request_id"] == "ci-42"
    status, system = ann.get("/systems/a.lab.test")
    assert status == 200 and system["attributes"] == {"gpu": ["a100"]}


def test_a_database_newer_than_the_code_is_refused_with_what_to_do(site, capsys):
    _, db = site
    migrate.upgrade(db)
    with db.writer.begin() as connection:
        connection.execute(text("UPDATE alembic_version SET version_num = '9999'"))
    for command in (["init"], ["user", "add", "carl"], ["serve"], ["worker"]):
        assert main(command) == 1, command
        error = capsys.readouterr().err
        assert "schema revision 9999, which this lablease does not know" in error, (command, error)
        assert "a newer lablease migrated it" in error
    assert migrate.current_revision(db) == "9999"


def test_a_downgrade_is_refused_unless_asked_for_and_then_done(site, capsys):
    _, db = site
    assert main(["init"]) == 0
    head, previous = chain()[-1], chain()[-2]
    assert main(["db", "downgrade", previous]) == 1
    error = capsys.readouterr().err
    assert f"downgrading from {head} to {previous} undoes {head}" in error and "--yes" in error
    assert migrate.current_revision(db) == head

    assert main(["db", "downgrade", previous, "--yes"]) == 0
    assert migrate.current_revision(db) == previous
    assert main(["user", "add", "carl"]) == 2  # the code needs its own schema back: a database it cannot use
    assert "run: lablease-server init" in capsys.readouterr().err
    assert main(["init"]) == 0 and migrate.current_revision(db) == head


def test_a_downgrade_to_an_unknown_or_later_revision_is_refused(site, capsys):
    _, db = site
    assert main(["init"]) == 0
    with pytest.raises(SystemExit) as stop:
        main(["db", "downgrade", "9999", "--yes"])
    assert stop.value.code == 2 and "unknown schema revision '9999'" in capsys.readouterr().err
    assert main(["db", "downgrade", chain()[-1], "--yes"]) == 1
    assert "nothing to downgrade" in capsys.readouterr().err


def test_an_upgrade_refuses_systems_sharing_a_netboot_mac_until_each_has_its_own(site, capsys):
    """0025 makes netboot MACs unique: MACs two systems already share (in any spelling) are named, in one line,
    and nothing changes until an administrator gives each system its own; the others are kept in one spelling."""
    settings, db = site
    before = migrate.scripts().get_revision("0025").down_revision
    migrate.upgrade(db, before)
    macs = {"a.lab.test": "52:54:00:bb:00:01", "b.lab.test": "52:54:00:BB:00:01", "c.lab.test": "525400bb0002",
            "d.lab.test": "52-54-00-bb-00-02", "e.lab.test": "5254.00BB.0003", "f.lab.test": ""}
    system = dict(SEEDS["0001"][6][1])
    with db.writer.begin() as connection:
        for name, row in SEEDS["0001"][0], SEEDS["0001"][4]:  # ann, an administrator, and her token
            connection.execute(plain(subset(name, row)).insert().values(row))
        for ident, (fqdn, mac) in enumerate(macs.items(), start=1):
            resource = {"id": ident, "kind": "system", "name": fqdn, "capacity": 1}
            connection.execute(plain(subset("resources", resource)).insert().values(resource))
            row = {**system, "id": ident, "resource_id": ident, "fqdn": fqdn,
                   "netboot": {"mac": mac, "loaders": ["ipxe"], "password": "kept"}}
            connection.execute(plain(subset("systems", row)).insert().values(row))

    assert main(["init"]) == 1
    error = capsys.readouterr().err.strip()
    assert "\n" not in error and "Traceback" not in error
    assert error.startswith("lablease-server: systems share a netboot MAC address")
    assert "52:54:00:bb:00:01 on a.lab.test, b.lab.test; 52:54:00:bb:00:02 on c.lab.test, d.lab.test." in error
    assert "Nothing was changed" in error and "run lablease-server init again" in error
    assert migrate.current_revision(db) == before

    with db.writer.begin() as connection:
        for fqdn, mac in (("b.lab.test", "52:54:00:bb:00:04"), ("d.lab.test", None)):
            connection.execute(text("UPDATE systems SET netboot = :n WHERE fqdn = :f"),
                               {"n": json.dumps({"mac": mac}), "f": fqdn})
    assert main(["init"]) == 0 and migrate.current_revision(db) == migrate.head_revision()
    capsys.readouterr()
    admin = Caller(Client(create_app(settings, db)), TOKEN)
    shown = {fqdn: admin.get(f"/systems/{fqdn}")[1]["netboot"] for fqdn in macs}
    assert {fqdn: netboot.get("mac") for fqdn, netboot in shown.items()} == {
        "a.lab.test": "52:54:00:bb:00:01", "b.lab.test": "52:54:00:bb:00:04", "c.lab.test": "52:54:00:bb:00:02",
        "d.lab.test": None, "e.lab.test": "52:54:00:bb:00:03", "f.lab.test": ""}
    assert shown["e.lab.test"] == {"mac": "52:54:00:bb:00:03", "loaders": ["ipxe"]}  # the secret kept, not shown
    status, problem = admin.post("/systems", {"fqdn": "g.lab.test", "arch": "x86_64",
                                              "netboot": {"mac": "52:54:00:BB:00:03"}})
    assert status == 409 and "e.lab.test" in problem["detail"]
