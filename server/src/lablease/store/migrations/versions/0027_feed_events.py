"""feed events: the history `GET /api/v1/events` reads, one row per notice, kept for events_keep

Revision ID: 0027
Revises: 0026
"""
from alembic import op
import sqlalchemy as sa
import lablease.store.types
from sqlalchemy import Text
from sqlalchemy.dialects import postgresql

revision = '0027'
down_revision = '0026'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('feed_events',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=64), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('dedupe_key', sa.String(length=400), nullable=False),
    sa.Column('payload', sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), 'postgresql'), nullable=False),
    sa.Column('created_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_feed_events')),
    sa.UniqueConstraint('dedupe_key', name=op.f('uq_feed_events_dedupe_key')),
    sqlite_autoincrement=True,  # ids are the feed's cursors: never reused (store/event_tables.py)
    )
    op.create_index(op.f('ix_feed_events_user_id'), 'feed_events', ['user_id'], unique=False)
    op.create_index(op.f('ix_feed_events_created_at'), 'feed_events', ['created_at'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_feed_events_created_at'), table_name='feed_events')
    op.drop_index(op.f('ix_feed_events_user_id'), table_name='feed_events')
    op.drop_table('feed_events')
