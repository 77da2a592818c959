"""Create or migrate the schema with Alembic (`lablease-server init`)."""
from __future__ import annotations

from functools import cache

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from alembic.util import CommandError
from sqlalchemy import inspect

from .db import Database


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", "lablease.store:migrations")
    return config


class SchemaNewer(Exception):
    """The database was migrated by a newer lablease than this one."""

    def __init__(self, revision: str):
        super().__init__(
            f"the database is at schema revision {revision}, which this lablease does not know (its newest is "
            f"{head_revision()}): a newer lablease migrated it. Run that version, or restore a backup taken "
            "before the upgrade (docs/deployment.md)")


class UpgradeRefused(Exception):
    """A migration found data it cannot carry over as it is (e.g. two systems sharing a netboot MAC): the
    message names what and what to do; nothing was changed (the upgrade is one transaction)."""


def upgrade(db: Database, revision: str = "head") -> None:
    """Bring the database to `revision`; safe to run again."""
    _migrate(db, command.upgrade, revision)


def downgrade(db: Database, revision: str) -> None:
    """Take the schema back to `revision`, dropping what later revisions added (`lablease-server db downgrade`)."""
    _migrate(db, command.downgrade, revision)


def _migrate(db: Database, step, revision: str) -> None:
    check_known(db)
    config = alembic_config()
    if db.dialect != "sqlite":
        with db.writer.begin() as connection:
            config.attributes["connection"] = connection
            step(config, revision)
        return
    # SQLite DDL runs outside BEGIN IMMEDIATE: the reader engine's plain BEGIN suffices. A migration may
    # rebuild a table (SQLite's way to change one): foreign key enforcement is off meanwhile, since dropping
    # the old table would cascade to the rows pointing at it, and every foreign key is checked before
    # committing. The pragma only takes effect outside a transaction, hence on the driver's connection.
    with db.reader.connect() as connection:
        driver = connection.connection.driver_connection
        driver.execute("PRAGMA foreign_keys=OFF")
        try:
            with connection.begin():
                config.attributes["connection"] = connection
                step(config, revision)
                broken = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                if broken:
                    raise RuntimeError(f"the migration broke foreign keys: {broken[:5]}")
        finally:
            driver.execute("PRAGMA foreign_keys=ON")


def current_revision(db: Database) -> str | None:
    with db.reader.connect() as connection:
        return revision_on(connection)


def revision_on(connection) -> str | None:
    """The schema's revision, read on a connection already open (one small query)."""
    return MigrationContext.configure(connection).get_current_revision()


@cache
def head_revision() -> str:
    """The newest revision this code knows (read from the migration scripts once per process)."""
    return scripts().get_current_head()


def scripts() -> ScriptDirectory:
    return ScriptDirectory.from_config(alembic_config())


def check_known(db: Database) -> None:
    """Refuse a database whose revision is not in this lablease's chain (it was migrated by a newer one)."""
    revision = current_revision(db)
    if revision is None:
        return
    try:
        scripts().get_revision(revision)
    except CommandError:
        raise SchemaNewer(revision) from None


def known_revision(text: str) -> str:
    """A revision id of this lablease's chain (or 'base'), else ValueError naming the known ones."""
    if text == "base" or any(script.revision == text for script in scripts().walk_revisions()):
        return text
    known = ", ".join(script.revision for script in reversed(list(scripts().walk_revisions())))
    raise ValueError(f"unknown schema revision {text!r}; known: base, {known}")


def table_names(db: Database) -> list[str]:
    with db.reader.connect() as connection:
        return inspect(connection).get_table_names()


def revisions_between(lower: str, upper: str | None) -> list[str]:
    """The revisions a downgrade from `upper` to `lower` undoes, newest first ([] when `lower` is not below)."""
    if upper is None or lower == upper:
        return []
    undone = []
    for script in scripts().iterate_revisions(upper, "base"):
        if script.revision == lower:
            return undone
        undone.append(script.revision)
    return undone if lower == "base" else []
