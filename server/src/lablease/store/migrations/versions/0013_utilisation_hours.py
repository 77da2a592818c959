"""utilisation hours: per pool and closed hour, seconds in recipe, manual, idle and broken (worker-aggregated)

Revision ID: 0013
Revises: 0012
"""
from alembic import op
import sqlalchemy as sa
import lablease.store.types

revision = '0013'
down_revision = '0012'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('utilisation_hours',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('pool_id', sa.Integer(), nullable=False),
    sa.Column('hour', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('systems', sa.Integer(), nullable=False),
    sa.Column('recipe', sa.Float(), nullable=False),
    sa.Column('manual', sa.Float(), nullable=False),
    sa.Column('idle', sa.Float(), nullable=False),
    sa.Column('broken', sa.Float(), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_utilisation_hours')),
    sa.UniqueConstraint('pool_id', 'hour', name='uq_utilisation_hours_pool_hour'),
    sqlite_autoincrement=True
    )


def downgrade() -> None:
    op.drop_table('utilisation_hours')
