"""`lablease-server restore` writes only into an empty place, unless forced, and only a backup it can read.

The busy-server backup and restore, on SQLite and PostgreSQL, is tests/e2e/test_backup_e2e.py.
"""
from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import tarfile
from contextlib import closing

import pytest

from lablease.cli.server import main
from tests.support.live import BIN


@pytest.fixture
def site(tmp_path, monkeypatch):
    """An initialised SQLite site with a user, and its backup; `to(dir)` points the commands elsewhere."""
    monkeypatch.delenv("LABLEASE_CONFIG", raising=False)
    monkeypatch.delenv("LABLEASE_DATABASE_URL", raising=False)

    def to(name: str):
        monkeypatch.setenv("LABLEASE_DATA_DIR", str(tmp_path / name))
        return tmp_path / name

    to("site")
    assert main(["init"]) == 0 and main(["user", "add", "ann"]) == 0
    assert main(["backup", str(tmp_path / "site.tar.gz")]) == 0
    return tmp_path / "site.tar.gz", to


def test_restore_into_a_new_data_dir_brings_back_users_and_the_site_key(site, capsys):
    archive, to = site
    restored = to("restored")
    assert main(["restore", str(archive)]) == 0
    assert (restored / "secret.key").read_bytes() == (archive.parent / "site" / "secret.key").read_bytes()
    assert (restored / "secret.key").stat().st_mode & 0o077 == 0
    capsys.readouterr()
    assert main(["user", "add", "ann"]) == 1  # she came back with the database
    assert "ann" in capsys.readouterr().err


def test_restore_over_a_database_that_is_not_empty_is_refused_unless_forced(site, capsys):
    archive, to = site
    to("site")
    assert main(["user", "add", "bob"]) == 0  # written after the backup
    capsys.readouterr()
    assert main(["restore", str(archive)]) == 1
    error = capsys.readouterr().err
    assert "is not empty" in error and "--force" in error
    assert main(["user", "add", "bob"]) == 1  # untouched: bob is still there
    assert main(["restore", str(archive), "--force"]) == 0
    assert main(["user", "add", "bob"]) == 0  # the backup's database, from before bob


def test_restore_next_to_another_site_key_is_refused(site, capsys):
    archive, to = site
    other = to("other")
    other.mkdir(mode=0o700)
    (other / "secret.key").write_text("a key of another site")
    assert main(["restore", str(archive)]) == 1
    assert "holds another site key" in capsys.readouterr().err
    with closing(sqlite3.connect(other / "lablease.db")) as connection:  # nothing written
        assert connection.execute("SELECT name FROM sqlite_master").fetchall() == []


def test_a_backup_of_a_newer_schema_or_not_a_backup_is_refused(site, capsys, tmp_path):
    archive, to = site
    to("restored")
    newer = tmp_path / "newer.tar.gz"
    with tarfile.open(archive) as source, tarfile.open(newer, "w:gz") as target:
        for member in source.getmembers():
            data = source.extractfile(member).read()
            if member.name == "manifest.json":
                data = json.dumps({**json.loads(data), "revision": "9999"}).encode()
                member.size = len(data)
            target.addfile(member, io.BytesIO(data))
    assert main(["restore", str(newer)]) == 1
    assert "schema revision 9999, which this lablease does not know" in capsys.readouterr().err
    bare = tmp_path / "bare.tar.gz"
    with tarfile.open(bare, "w:gz") as target:
        target.addfile(tarfile.TarInfo("notes.txt"), io.BytesIO(b""))
    assert main(["restore", str(bare)]) == 2  # a FILE that is not what the command takes: a usage error
    assert "the backup has no manifest.json" in capsys.readouterr().err



def test_on_postgresql_restore_refuses_a_database_in_use_and_replaces_it_when_forced(request, tmp_path):
    """pg_dump and pg_restore, through the same commands (each its own process, as an operator runs them);
    the busy-server case is in tests/e2e."""
    url = request.getfixturevalue("postgres").create_database("forced_restore")
    env = {**os.environ, "LABLEASE_DATABASE_URL": url, "LABLEASE_DATA_DIR": str(tmp_path / "site")}
    env.pop("LABLEASE_CONFIG", None)

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([str(BIN / "lablease-server"), *args], env=env, capture_output=True, text=True,
                              timeout=120)

    archive = str(tmp_path / "site.tar.gz")
    assert cli("init").returncode == 0
    said = cli("backup", archive)
    assert "backed up postgresql database" in said.stdout, said.stderr
    assert cli("user", "add", "bob").returncode == 0
    refused = cli("restore", archive)
    assert refused.returncode == 1 and "is not empty" in refused.stderr
    forced = cli("restore", archive, "--force")
    assert forced.returncode == 0, forced.stderr
    assert cli("user", "add", "bob").returncode == 0  # the database is the backup's again, from before bob
