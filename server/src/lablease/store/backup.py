"""Backups of a site: its database and its site key in one tar archive (`lablease-server backup|restore`).

The archive holds `manifest.json` (format, dialect, schema revision, time),
the database — a SQLite file copied with SQLite's online backup API, or a
PostgreSQL `pg_dump --format=custom` dump — and `secret.key` when the site
key is the generated file (the stored power and webhook secrets are sealed
under it: a database without its key has lost them). Both copies are
consistent while the server runs: the backup API copies one read
transaction's snapshot and pg_dump works in one serializable snapshot.
Files the site keeps beside (kickstart templates, power scripts, the TFTP
root, the settings file) are not in it: docs/deployment.md says how.
"""
from __future__ import annotations

import io
import json
import os
import sqlite3
import tarfile
import tempfile
import zlib
from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy.engine import make_url

from . import migrate, pgdump
from .db import BUSY_TIMEOUT, Database
from .secrets import private_dir, private_file

FORMAT = 1
MANIFEST, KEY = "manifest.json", "secret.key"
DUMPS = {"sqlite": "lablease.db", "postgresql": "lablease.pgdump"}


class Refused(Exception):
    """A backup or restore that would lose or overwrite data; the message says why and what to do."""


class NotABackup(Refused):
    """The file given to restore cannot be read, or is not a whole lablease backup."""


def backup(settings, target: Path) -> dict:
    """Write the archive to `target` (mode 0600: it holds the site key) and return its manifest."""
    db = Database(settings.database)
    try:
        migrate.check_known(db)
        revision = migrate.current_revision(db)
        if revision is None:
            raise Refused(f"{_where(settings)} holds no lablease database (run lablease-server init first)")
    finally:
        db.dispose()
    dump = DUMPS.get(db.dialect)
    if dump is None:
        raise Refused(f"cannot back up a {db.dialect} database (SQLite and PostgreSQL only)")
    key_file = Path(settings.data_dir) / KEY
    manifest = {"format": FORMAT, "dialect": db.dialect, "revision": revision, "database": dump,
                "site_key": "setting" if settings.secret_key else (KEY if key_file.exists() else "none"),
                "created": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    with tempfile.TemporaryDirectory(prefix=".lablease-backup-", dir=target.parent) as work:
        copy = Path(work) / dump
        if db.dialect == "sqlite":
            _copy_sqlite(_sqlite_path(settings.database), copy)
            manifest["revision"] = _sqlite_revision(copy)  # the copy's own, should init have run meanwhile
        else:
            pgdump.dump(settings.database, copy)
        partial = Path(work) / "archive"
        private_file(partial)
        with tarfile.open(partial, "w:gz") as archive:
            _add_bytes(archive, MANIFEST, json.dumps(manifest, indent=2).encode())
            archive.add(copy, dump)
            if manifest["site_key"] == KEY:
                archive.add(key_file, KEY)
        os.replace(partial, target)  # whole or absent: never a half-written archive under the name
    return manifest


def restore(settings, source: Path, force: bool = False) -> dict:
    """Put the archive's database (and site key) where the settings point; refuse to overwrite unless forced."""
    with _archive(source) as archive, tempfile.TemporaryDirectory(prefix=".lablease-restore-") as work:
        manifest = _manifest(source, archive)
        _check_revision(manifest["revision"])
        dialect = make_url(settings.database).get_backend_name()
        if dialect != manifest["dialect"]:
            raise Refused(f"{source} holds a {manifest['dialect']} database but database_url names a {dialect} one "
                          "(moving between SQLite and PostgreSQL is not a restore)")
        dump = Path(work) / manifest["database"]
        dump.write_bytes(_member(archive, manifest["database"]))
        key = _member(archive, KEY) if manifest["site_key"] == KEY else None
        _check_target(settings, key, force)  # everything checked before anything is written
        if dialect == "sqlite":
            _restore_sqlite(dump, _sqlite_path(settings.database))
        else:
            pgdump.restore(settings.database, dump, clean=force)
        if key is not None:
            key_path = private_dir(Path(settings.data_dir)) / KEY
            private_file(key_path)
            key_path.write_bytes(key)
    return manifest


def _archive(source: Path) -> tarfile.TarFile:
    try:
        return tarfile.open(source, "r:*")
    except OSError as error:
        raise NotABackup(f"{source}: cannot be read: {error.strerror or error}") from None
    except (tarfile.TarError, EOFError, zlib.error):
        raise NotABackup(f"{source} is not a lablease backup (not a tar archive, or a damaged one)") from None


MANIFEST_KEYS = ("format", "dialect", "revision", "database", "site_key")


def _manifest(source: Path, archive: tarfile.TarFile) -> dict:
    """The archive's manifest, checked whole before anything in it is used."""
    try:
        manifest = json.loads(_member(archive, MANIFEST))
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise NotABackup(f"{source}: its {MANIFEST} is not JSON: not a lablease backup, or damaged") from None
    if not isinstance(manifest, dict) or any(not isinstance(manifest.get(key), (str, int)) for key in MANIFEST_KEYS):
        raise NotABackup(f"{source}: its {MANIFEST} lacks {', '.join(MANIFEST_KEYS)}: not a lablease backup")
    if manifest["format"] != FORMAT:
        raise NotABackup(f"{source} is not a lablease backup of format {FORMAT}")
    return manifest


def _check_revision(revision: str) -> None:
    try:
        migrate.known_revision(revision)
    except ValueError:
        raise migrate.SchemaNewer(revision) from None


def _check_target(settings, key: bytes | None, force: bool) -> None:
    db = Database(settings.database)
    try:
        tables = migrate.table_names(db)
    finally:
        db.dispose()
    if tables and not force:
        raise Refused(f"{_where(settings)} is not empty ({len(tables)} tables): restore into a new data directory "
                      "or an empty database, or stop every server and worker and repeat with --force to replace it")
    key_path = Path(settings.data_dir) / KEY
    if key is not None and key_path.exists() and key_path.read_bytes().strip() != key.strip() and not force:
        raise Refused(f"{key_path} holds another site key than the backup's; the restored secrets need the "
                      "backup's: move it away, or repeat with --force to replace it")


def _where(settings) -> str:
    return make_url(settings.database).render_as_string(hide_password=True)


def _sqlite_path(url: str) -> Path:
    return Path(make_url(url).database)


def _copy_sqlite(path: Path, copy: Path) -> None:
    """One read transaction's snapshot of a live WAL database, made a self-contained file and checked."""
    source = sqlite3.connect(path, timeout=BUSY_TIMEOUT)
    target = sqlite3.connect(copy)
    try:
        source.backup(target)  # all pages in one step: one snapshot, writers carry on meanwhile (WAL)
        target.execute("PRAGMA journal_mode=DELETE")
        problems = target.execute("PRAGMA quick_check").fetchall()
        if problems != [("ok",)]:
            raise Refused(f"the copy of {path} is damaged: {problems[:3]}")
    finally:
        source.close()
        target.close()


def _restore_sqlite(dump: Path, path: Path) -> None:
    """Copy the backup into the database through SQLite (its locks), so a forced restore never tears a file."""
    private_file(path)
    source = sqlite3.connect(dump)
    target = sqlite3.connect(path, timeout=BUSY_TIMEOUT)
    try:
        source.backup(target)
        target.execute("PRAGMA journal_mode=WAL")  # as the server runs it (store/db.py)
    finally:
        source.close()
        target.close()


def _sqlite_revision(path: Path) -> str:
    connection = sqlite3.connect(path)
    try:
        return connection.execute("SELECT version_num FROM alembic_version").fetchone()[0]
    finally:
        connection.close()


def _add_bytes(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o600, int(datetime.now().timestamp())
    archive.addfile(info, io.BytesIO(data))


def _member(archive: tarfile.TarFile, name: str) -> bytes:
    """A regular file of the archive by name; nothing is extracted to paths the archive chooses."""
    try:
        member = archive.getmember(name)
        handle = archive.extractfile(member) if member.isfile() else None
        if handle is None:
            raise NotABackup(f"the backup's {name} is not a regular file")
        return handle.read()
    except KeyError:
        raise NotABackup(f"the backup has no {name}: not a lablease backup, or damaged") from None
    except (tarfile.TarError, EOFError, zlib.error):  # a truncated or corrupted archive, found while reading it
        raise NotABackup(f"the backup is damaged: its {name} cannot be read whole") from None
