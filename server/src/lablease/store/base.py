"""The declarative base every table module shares: one metadata, one naming convention.

It lives apart from tables.py so that advance_tables.py, provision_tables.py and worker_tables.py can
subclass it without importing tables.py first (tables.py re-exports them; importing any one of
them on its own must work, which tests/server/unit/test_layering.py checks).
"""
from sqlalchemy import MetaData
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
