"""worker failures: items whose handling raised, parked so they do not hold up the others

Revision ID: 0010
Revises: 0009
"""
from alembic import op
import sqlalchemy as sa
import lablease.store.types

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('worker_failures',
    sa.Column('kind', sa.String(length=40), nullable=False),
    sa.Column('item_id', sa.Integer(), nullable=False),
    sa.Column('error', sa.Text(), nullable=False),
    sa.Column('failed_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('kind', 'item_id', name=op.f('pk_worker_failures'))
    )


def downgrade() -> None:
    op.drop_table('worker_failures')
