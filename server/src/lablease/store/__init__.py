"""Storage: SQLAlchemy tables, Alembic migrations, transactions, atomic booking.

Importing any module of the package first maps every table: the tables are split by what they hold
(tables.py the core, advance_tables.py, provision_tables.py...), and the mapper finds the classes a
relationship names by name, so all of them are imported here, once. Each table lives in one module and is
imported from there; a split module refers to tables.py's classes only by name (or for type checking),
so the modules import one another without a cycle.
"""
from . import (advance_tables, event_tables, health_tables, idempotency_tables, lab_tables,  # noqa: F401
               provision_tables, report_tables, tables, waitline_tables, worker_tables)
