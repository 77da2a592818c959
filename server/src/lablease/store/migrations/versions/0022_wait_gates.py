"""wait gates: a waiting reservation keeps the health it asked for (healthy_within) and whether an admin
forced it past a pool's automation floor, both checked when it is granted

Revision ID: 0022
Revises: 0021
"""
from alembic import op
import sqlalchemy as sa

revision = '0022'
down_revision = '0021'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Added columns only (nullable, or with a default): no table is rebuilt.
    op.add_column('reservation_waits', sa.Column('healthy_within_seconds', sa.Integer(), nullable=True))
    op.add_column('reservation_waits', sa.Column('force', sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    REBUILD = {"sqlite_autoincrement": True}  # a SQLite rebuild keeps ids never reused (store/tables.py)
    with op.batch_alter_table('reservation_waits', schema=None, table_kwargs=REBUILD) as batch_op:
        batch_op.drop_column('force')
        batch_op.drop_column('healthy_within_seconds')
