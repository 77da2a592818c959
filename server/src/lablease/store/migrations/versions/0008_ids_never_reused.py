"""Ids are never reused: SQLite tables with an integer id become AUTOINCREMENT; jobs keep the document
submitted with a request_id, so a retry can be compared with it.

SQLite cannot add AUTOINCREMENT to a table: each one is rebuilt (created anew,
rows copied with their ids, the old one dropped, the new one renamed), which
keeps its indexes, constraints and the foreign keys that point to it.
store/migrate.py runs migrations with SQLite's foreign key enforcement off
(dropping a referenced table would otherwise cascade its deletes) and checks
every foreign key before committing. PostgreSQL's sequences never reuse a
value: nothing to do there.

Revision ID: 0008
Revises: 0007
"""
import sqlalchemy as sa
from alembic import op
from sqlalchemy import Text
from sqlalchemy.dialects import postgresql

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), 'postgresql')


def _reusing_tables(bind) -> list[str]:
    """Tables whose own integer id SQLite may reuse: a one-column INTEGER key, no AUTOINCREMENT yet."""
    inspector = sa.inspect(bind)
    found = []
    for name in inspector.get_table_names():
        key = inspector.get_pk_constraint(name)["constrained_columns"]
        columns = {c["name"]: c for c in inspector.get_columns(name)}
        sql = bind.exec_driver_sql("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?",
                                   (name,)).scalar_one()
        referencing = any(fk["constrained_columns"] == key for fk in inspector.get_foreign_keys(name))
        if (len(key) == 1 and isinstance(columns[key[0]]["type"], sa.Integer) and not referencing
                and "AUTOINCREMENT" not in sql.upper() and name != "alembic_version"):
            found.append(name)
    return found


def upgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('request_document', JSON, nullable=True))
    bind = op.get_bind()
    if bind.dialect.name != 'sqlite':
        return
    for name in _reusing_tables(bind):
        with op.batch_alter_table(name, recreate='always', table_kwargs={'sqlite_autoincrement': True}):
            pass


def downgrade() -> None:
    # AUTOINCREMENT stays: it only stops reuse, which no earlier revision relied on.
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_column('request_document')
