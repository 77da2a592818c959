"""Storage: SQLAlchemy tables, Alembic migrations, transactions, atomic booking.

Importing any module of the package first maps every table (tables.py imports its split modules at
its end), so a split module (advance_tables.py...) imported alone finds the tables it refers to
without importing tables.py back: the package's modules import one another without a cycle.
"""
from . import tables  # noqa: F401
