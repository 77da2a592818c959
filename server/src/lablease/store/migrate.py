"""Create or migrate the schema with Alembic (`lablease-server init`)."""
from __future__ import annotations

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
    # SQLite DDL runs outside BEGIN IMMEDIATE: the reader engine's plain BEGIN suffices.
    engine = db.reader if db.dialect == "sqlite" else db.writer
    with engine.begin() as connection:
        config.attributes["connection"] = connection
        command.upgrade(config, revision)


def current_revision(db: Database) -> str | None:
    with db.reader.connect() as connection:
        return MigrationContext.configure(connection).get_current_revision()


def head_revision() -> str:
    return ScriptDirectory.from_config(alembic_config()).get_current_head()
