"""lab agents: labs whose commands an agent inside the lab carries out, and the agents' tokens (hashed)

A lab not in `labs` is served by the worker as before, so existing sites change nothing
(docs/lab-agents.md).

Revision ID: 0031
Revises: 0029
"""
from alembic import op
import sqlalchemy as sa
import lablease.store.types

revision = '0031'
down_revision = '0029'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('labs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=64), nullable=False),
    sa.Column('created_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('agent_seen_at', lablease.store.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('agent_version', sa.String(length=64), nullable=True),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_labs')),
    sa.UniqueConstraint('name', name=op.f('uq_labs_name')),
    sqlite_autoincrement=True,
    )
    op.create_table('lab_tokens',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('lab_id', sa.Integer(), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('created_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('revoked_at', lablease.store.types.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['lab_id'], ['labs.id'], name=op.f('fk_lab_tokens_lab_id_labs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_lab_tokens')),
    sa.UniqueConstraint('token_hash', name=op.f('uq_lab_tokens_token_hash')),
    sqlite_autoincrement=True,
    )
    op.create_index(op.f('ix_lab_tokens_lab_id'), 'lab_tokens', ['lab_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_lab_tokens_lab_id'), table_name='lab_tokens')
    op.drop_table('lab_tokens')
    op.drop_table('labs')
