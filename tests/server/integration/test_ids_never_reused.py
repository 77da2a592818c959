"""Ids are never reused: a deleted row's id never goes to a new row, on SQLite and PostgreSQL.

On SQLite that needs AUTOINCREMENT (migration 0008 rebuilt the older tables
with it); PostgreSQL's sequences never go back.
"""
import sqlite3

import pytest
from sqlalchemy import inspect, text

from lablease.store.db import Database
from lablease.store.migrate import upgrade

TREE = {"name": "Fedora-40", "family": "Fedora40", "arch": "x86_64", "url": "http://mirror.lab.test/f40/os/",
        "kernel": "images/pxeboot/vmlinuz", "initrd": "images/pxeboot/initrd.img"}


def test_a_deleted_distro_tree_or_access_rule_id_goes_to_no_new_one(lab):
    first = [lab.admin.post("/distro-trees", {**TREE, "name": f"F-{n}"})[1]["id"] for n in (1, 2)]
    assert lab.admin.delete(f"/distro-trees/{first[-1]}")[0] == 204
    status, again = lab.admin.post("/distro-trees", {**TREE, "name": "F-3"})
    assert status == 201 and again["id"] > first[-1], (first, again)
    assert lab.admin.get(f"/distro-trees/{first[-1]}")[0] == 404  # the old id names nothing, not the new tree
    lab.system("a.lab.test")
    path = "/systems/a.lab.test/access-policy/rules"
    status, rule = lab.admin.post(path, {"permission": "loan_self", "user": "alice"})
    assert status == 201, rule
    assert lab.admin.delete(f"{path}/{rule['id']}")[0] == 204
    status, again = lab.admin.post(path, {"permission": "loan_self", "user": "bob"})
    assert status == 201 and again["id"] > rule["id"], (rule, again)


def test_every_table_with_its_own_integer_id_is_autoincrement_on_sqlite(db):
    if db.is_postgresql:
        return  # sequences never reuse
    with db.reader.connect() as connection:
        inspector = inspect(connection)
        plain = []
        for name in inspector.get_table_names():
            key = inspector.get_pk_constraint(name)["constrained_columns"]
            sql = connection.execute(text("SELECT sql FROM sqlite_master WHERE name = :n"), {"n": name}).scalar_one()
            if key == ["id"] and "AUTOINCREMENT" not in sql:
                plain.append(name)
    assert plain == []


@pytest.fixture
def old_database(tmp_path):
    """A SQLite database at revision 0007 (before AUTOINCREMENT) with rows that point at each other."""
    path = tmp_path / "old.db"
    db = Database(f"sqlite:///{path}")
    upgrade(db, "0007")
    rows = [
        "INSERT INTO users (id, name, is_admin, disabled, created_at) VALUES (1, 'ann', 1, 0, '2026-01-01')",
        "INSERT INTO resources (id, kind, name, capacity) VALUES (1, 'system', 'a.lab.test', 1)",
        "INSERT INTO systems (id, resource_id, fqdn, arch, attributes, condition, usage, power, netboot, created_at)"
        " VALUES (1, 1, 'a.lab.test', 'x86_64', '{}', 'manual', 'idle', '{}', '{}', '2026-01-01')",
        "INSERT INTO access_rules (id, system_id, permission, user_id) VALUES (1, 1, 'reserve', 1)",
        *(f"INSERT INTO distro_trees (id, name, arch, tags, url, kernel, initrd, labs, created_at) VALUES"
          f" ({n}, 'F-{n}', 'x86_64', '[]', 'http://m/', 'k', 'i', '[]', '2026-01-01')" for n in (1, 2)),
        "INSERT INTO installations (id, system_id, distro_tree_id, distro, ks_meta, kernel_options, kickstart, nonce,"
        " status, created_at) VALUES (1, 1, 2, '{}', '', '', '# ks', 'n', 'completed', '2026-01-01')",
    ]
    with db.writer.begin() as connection:
        for row in rows:
            connection.exec_driver_sql(row)
    db.dispose()
    return path


def _dump(path, like: dict | None = None) -> dict:
    """Every row of the tables; with `like`, only the columns that dump has (later migrations add columns)."""
    connection = sqlite3.connect(path)
    connection.row_factory = sqlite3.Row
    tables = ("users", "systems", "access_rules", "distro_trees", "installations")
    dump = {t: [dict(row) for row in connection.execute(f"SELECT * FROM {t} ORDER BY id")] for t in tables}
    connection.close()
    if like is not None:
        dump = {t: [{k: row[k] for k in (like[t][0] if like[t] else row)} for row in rows] for t, rows in dump.items()}
    return dump


def test_migration_0008_keeps_rows_and_foreign_keys_and_stops_reuse(old_database):
    before = _dump(old_database)
    db = Database(f"sqlite:///{old_database}")
    upgrade(db, "0008")
    assert _dump(old_database) == before  # every row kept, ids and all (later revisions add columns)
    upgrade(db)
    assert _dump(old_database, like=before) == before  # every row kept, ids and all
    with db.writer.begin() as connection:
        assert connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall() == []
        assert connection.exec_driver_sql("PRAGMA foreign_keys").scalar_one() == 1
        # The foreign keys still act: removing the tree clears the installation's reference ...
        connection.exec_driver_sql("DELETE FROM distro_trees WHERE id = 2")
        assert connection.exec_driver_sql("SELECT distro_tree_id FROM installations").scalar_one() is None
        # ... and the next tree does not get the deleted one's id.
        connection.exec_driver_sql("INSERT INTO distro_trees (name, arch, tags, url, kernel, initrd, labs, created_at)"
                                   " VALUES ('F-3', 'x86_64', '[]', 'http://m/', 'k', 'i', '[]', '2026-01-02')")
        assert connection.exec_driver_sql("SELECT max(id) FROM distro_trees").scalar_one() == 3
        connection.exec_driver_sql("DELETE FROM systems WHERE id = 1")  # cascades to its access rules
        assert connection.exec_driver_sql("SELECT count(*) FROM access_rules").scalar_one() == 0
    db.dispose()
