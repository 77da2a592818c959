"""idempotency records: the answer to a writing request sent with an Idempotency-Key, kept for a while

A client that lost the answer to a create sends it again with the same key and gets the first answer
back instead of a second object; one table serves every route (docs/api.md, "Retrying a write").

Revision ID: 0026
Revises: 0025
"""
from alembic import op
import sqlalchemy as sa
import lablease.store.types

revision = '0026'
down_revision = '0025'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('idempotency_records',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=128), nullable=False),
    sa.Column('method', sa.String(length=8), nullable=False),
    sa.Column('path', sa.Text(), nullable=False),
    sa.Column('body_hash', sa.String(length=64), nullable=False),
    sa.Column('status', sa.Integer(), nullable=False),
    sa.Column('mimetype', sa.String(length=100), nullable=False),
    sa.Column('answer', sa.Text(), nullable=False),
    sa.Column('created_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_idempotency_records_user_id_users'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_idempotency_records')),
    sa.UniqueConstraint('user_id', 'key', name='uq_idempotency_records_user_id'),
    sqlite_autoincrement=True,  # ids never reused (migration 0008, store/tables.py _never_reuse_ids)
    )
    op.create_index(op.f('ix_idempotency_records_created_at'), 'idempotency_records', ['created_at'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_idempotency_records_created_at'), table_name='idempotency_records')
    op.drop_table('idempotency_records')
