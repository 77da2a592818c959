"""worker heartbeats (each running worker's last sign of life, for readiness); open reservations indexed

Revision ID: 0014
Revises: 0013
"""
from alembic import op
import sqlalchemy as sa
import lablease.store.types

revision = '0014'
down_revision = '0013'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('worker_heartbeats',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('worker', sa.String(length=200), nullable=False),
    sa.Column('started_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('beat_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_worker_heartbeats')),
    sa.UniqueConstraint('worker', name=op.f('uq_worker_heartbeats_worker')),
    sqlite_autoincrement=True
    )
    op.create_index(op.f('ix_worker_heartbeats_beat_at'), 'worker_heartbeats', ['beat_at'], unique=False)
    op.create_index('ix_reservations_open', 'reservations', ['start_at'], unique=False,
                    sqlite_where=sa.text('returned_at IS NULL'), postgresql_where=sa.text('returned_at IS NULL'))


def downgrade() -> None:
    op.drop_index('ix_reservations_open', table_name='reservations',
                  sqlite_where=sa.text('returned_at IS NULL'), postgresql_where=sa.text('returned_at IS NULL'))
    op.drop_index(op.f('ix_worker_heartbeats_beat_at'), table_name='worker_heartbeats')
    op.drop_table('worker_heartbeats')
