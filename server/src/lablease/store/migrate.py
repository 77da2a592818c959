"""Create or migrate the schema with Alembic (`lablease-server init`)."""
from __future__ import annotations

from functools import cache

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory

from .db import Database


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", "lablease.store:migrations")
    return config


def upgrade(db: Database, revision: str = "head") -> None:
    """Bring the database to `revision`; safe to run again."""
    config = alembic_config()
    if db.dialect != "sqlite":
        with db.writer.begin() as connection:
            config.attributes["connection"] = connection
            command.upgrade(config, revision)
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
                command.upgrade(config, revision)
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
    return ScriptDirectory.from_config(alembic_config()).get_current_head()
