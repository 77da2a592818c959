"""Alembic environment: runs on the connection that store/migrate.py hands over."""
from alembic import context

from lablease.store.tables import Base

connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True, compare_type=True)
with context.begin_transaction():
    context.run_migrations()
