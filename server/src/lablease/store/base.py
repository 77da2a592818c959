"""The declarative base every table module shares: one metadata, one naming convention.

It lives apart from tables.py so that advance_tables.py, provision_tables.py and the other split modules
can subclass it without importing tables.py (the package's __init__ imports them all; importing any one of
them on its own must work, which tests/server/unit/test_layering.py checks).
"""
from sqlalchemy import Integer, MetaData, Table
from sqlalchemy.orm import DeclarativeBase

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        table = cls.__dict__.get("__table__")
        if isinstance(table, Table):
            never_reuse_ids(table)


def never_reuse_ids(table: Table) -> None:
    """A table with its own integer id is AUTOINCREMENT on SQLite.

    Without it SQLite gives the id of the last row deleted to the next one
    inserted, and what still names the old id (an installation naming its
    distro tree, an activity entry, a client's saved id) then names the new
    row. PostgreSQL's sequences never go back. Set here, for every table as it
    is mapped, so a table added later cannot forget it; migration 0008 rebuilt
    the tables that existed before.
    """
    key = list(table.primary_key.columns)
    if len(key) == 1 and isinstance(key[0].type, Integer) and not key[0].foreign_keys:
        table.dialect_kwargs["sqlite_autoincrement"] = True
