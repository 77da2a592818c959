"""sealed secrets: webhook secrets are stored encrypted, which needs room for the Fernet token

Existing plain-text secrets keep working (they are read as they are) and are
sealed by `lablease-server init` right after migrating (store/secrets.py
seal_all), which has the site key; a migration does not.

Revision ID: 0009
Revises: 0008
"""
from alembic import op
import sqlalchemy as sa

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None

TABLES = ('users', 'groups')


def upgrade() -> None:
    for table in TABLES:
        # SQLite rebuilds the table: keep AUTOINCREMENT (0008), which reflection does not report.
        with op.batch_alter_table(table, table_kwargs={"sqlite_autoincrement": True}) as batch_op:
            batch_op.alter_column('webhook_secret', existing_type=sa.String(length=200), type_=sa.String(length=1000),
                                  existing_nullable=True)


def downgrade() -> None:
    for table in TABLES:
        # SQLite rebuilds the table: keep AUTOINCREMENT (0008), which reflection does not report.
        with op.batch_alter_table(table, table_kwargs={"sqlite_autoincrement": True}) as batch_op:
            batch_op.alter_column('webhook_secret', existing_type=sa.String(length=1000), type_=sa.String(length=200),
                                  existing_nullable=True)
