"""holds: a pool's floor of idle Automated systems, a purpose on reservations and loans, an advance
reservation's released systems

Revision ID: 0019
Revises: 0018
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0019'
down_revision = '0018'
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')


def upgrade() -> None:
    # Added columns only (nullable, or with a default): no table is rebuilt, existing rows keep their ids.
    op.add_column('pools', sa.Column('automation_floor', sa.Integer(), nullable=False, server_default='0'))
    op.add_column('reservations', sa.Column('purpose', sa.Text(), nullable=True))
    op.add_column('loans', sa.Column('purpose', sa.Text(), nullable=True))
    op.add_column('advance_reservations', sa.Column('released', JSON, nullable=True))


def downgrade() -> None:
    REBUILD = {"sqlite_autoincrement": True}  # a SQLite rebuild keeps ids never reused (store/tables.py)
    for table, column in (('advance_reservations', 'released'), ('loans', 'purpose'),
                          ('reservations', 'purpose'), ('pools', 'automation_floor')):
        with op.batch_alter_table(table, schema=None, table_kwargs=REBUILD) as batch_op:
            batch_op.drop_column(column)
