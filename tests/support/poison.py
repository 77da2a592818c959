"""Poisoned rows for tests of the worker's isolation: bad data planted straight into the database."""
from __future__ import annotations

from sqlalchemy import text


def poison_updates(engine, table: str, ident: int) -> None:
    """Make one row unwritable: whatever the worker does with it raises in the database (a trigger)."""
    with engine.begin() as db:
        if engine.dialect.name == "sqlite":
            db.execute(text(f"CREATE TRIGGER poison_{table}_{ident} BEFORE UPDATE ON {table} WHEN OLD.id = {ident} "
                            "BEGIN SELECT RAISE(ABORT, 'poisoned row'); END"))
        else:
            db.execute(text("CREATE OR REPLACE FUNCTION poisoned() RETURNS trigger AS "
                            "$$ BEGIN RAISE EXCEPTION 'poisoned row'; END $$ LANGUAGE plpgsql"))
            db.execute(text(f"CREATE TRIGGER poison_{table}_{ident} BEFORE UPDATE ON {table} FOR EACH ROW "
                            f"WHEN (OLD.id = {ident}) EXECUTE FUNCTION poisoned()"))
