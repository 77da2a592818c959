"""loans pools policies outbox

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 04:02:01.123162
"""
from alembic import op
import sqlalchemy as sa
import lablease.store.types
from sqlalchemy import Text
from sqlalchemy.dialects import postgresql

revision = '0002'
down_revision = '0001'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('outbox',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('channel', sa.String(length=16), nullable=False),
    sa.Column('destination', sa.String(length=2000), nullable=False),
    sa.Column('subject', sa.String(length=400), nullable=False),
    sa.Column('payload', sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), 'postgresql'), nullable=False),
    sa.Column('dedupe_key', sa.String(length=400), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('next_attempt_at', lablease.store.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('sent_at', lablease.store.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('last_error', sa.Text(), nullable=True),
    sa.Column('created_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_outbox')),
    sa.UniqueConstraint('dedupe_key', name=op.f('uq_outbox_dedupe_key'))
    )
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_outbox_next_attempt_at'), ['next_attempt_at'], unique=False)

    op.create_table('pools',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=64), nullable=False),
    sa.Column('description', sa.Text(), nullable=True),
    sa.Column('owner_group_id', sa.Integer(), nullable=True),
    sa.Column('created_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['owner_group_id'], ['groups.id'], name=op.f('fk_pools_owner_group_id_groups'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_pools')),
    sa.UniqueConstraint('name', name=op.f('uq_pools_name'))
    )
    op.create_table('pool_access_rules',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('pool_id', sa.Integer(), nullable=False),
    sa.Column('permission', sa.String(length=32), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=True),
    sa.Column('group_id', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['group_id'], ['groups.id'], name=op.f('fk_pool_access_rules_group_id_groups'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['pool_id'], ['pools.id'], name=op.f('fk_pool_access_rules_pool_id_pools'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_pool_access_rules_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_pool_access_rules'))
    )
    with op.batch_alter_table('pool_access_rules', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_pool_access_rules_pool_id'), ['pool_id'], unique=False)

    op.create_table('loans',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('system_id', sa.Integer(), nullable=False),
    sa.Column('recipient_id', sa.Integer(), nullable=False),
    sa.Column('lender_id', sa.Integer(), nullable=True),
    sa.Column('start_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('end_at', lablease.store.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('returned_at', lablease.store.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('return_reason', sa.String(length=32), nullable=True),
    sa.Column('comment', sa.Text(), nullable=True),
    sa.Column('warn_at', lablease.store.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('created_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['lender_id'], ['users.id'], name=op.f('fk_loans_lender_id_users'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['recipient_id'], ['users.id'], name=op.f('fk_loans_recipient_id_users')),
    sa.ForeignKeyConstraint(['system_id'], ['systems.id'], name=op.f('fk_loans_system_id_systems'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_loans'))
    )
    with op.batch_alter_table('loans', schema=None) as batch_op:
        batch_op.create_index('ix_loans_end_open', ['end_at'], unique=False, sqlite_where=sa.text('returned_at IS NULL'), postgresql_where=sa.text('returned_at IS NULL'))
        batch_op.create_index('ix_loans_system', ['system_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_loans_warn_at'), ['warn_at'], unique=False)
        batch_op.create_index('uq_loans_one_active', ['system_id'], unique=True, sqlite_where=sa.text('returned_at IS NULL'), postgresql_where=sa.text('returned_at IS NULL'))

    op.create_table('pool_systems',
    sa.Column('pool_id', sa.Integer(), nullable=False),
    sa.Column('system_id', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['pool_id'], ['pools.id'], name=op.f('fk_pool_systems_pool_id_pools'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['system_id'], ['systems.id'], name=op.f('fk_pool_systems_system_id_systems'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('pool_id', 'system_id', name=op.f('pk_pool_systems'))
    )
    with op.batch_alter_table('pool_systems', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_pool_systems_system_id'), ['system_id'], unique=False)

    with op.batch_alter_table('groups', schema=None) as batch_op:
        batch_op.add_column(sa.Column('webhook_url', sa.String(length=2000), nullable=True))
        batch_op.add_column(sa.Column('webhook_secret', sa.String(length=200), nullable=True))

    with op.batch_alter_table('reservations', schema=None) as batch_op:
        batch_op.add_column(sa.Column('warn_at', lablease.store.types.UTCDateTime(timezone=True), nullable=True))
        batch_op.create_index(batch_op.f('ix_reservations_warn_at'), ['warn_at'], unique=False)

    with op.batch_alter_table('systems', schema=None) as batch_op:
        batch_op.add_column(sa.Column('policy_pool_id', sa.Integer(), nullable=True))
        batch_op.create_foreign_key(batch_op.f('fk_systems_policy_pool_id_pools'), 'pools', ['policy_pool_id'], ['id'], ondelete='SET NULL')

    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.add_column(sa.Column('webhook_url', sa.String(length=2000), nullable=True))
        batch_op.add_column(sa.Column('webhook_secret', sa.String(length=200), nullable=True))



def downgrade() -> None:
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.drop_column('webhook_secret')
        batch_op.drop_column('webhook_url')

    with op.batch_alter_table('systems', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_systems_policy_pool_id_pools'), type_='foreignkey')
        batch_op.drop_column('policy_pool_id')

    with op.batch_alter_table('reservations', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_reservations_warn_at'))
        batch_op.drop_column('warn_at')

    with op.batch_alter_table('groups', schema=None) as batch_op:
        batch_op.drop_column('webhook_secret')
        batch_op.drop_column('webhook_url')

    with op.batch_alter_table('pool_systems', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_pool_systems_system_id'))

    op.drop_table('pool_systems')
    with op.batch_alter_table('loans', schema=None) as batch_op:
        batch_op.drop_index('uq_loans_one_active', sqlite_where=sa.text('returned_at IS NULL'), postgresql_where=sa.text('returned_at IS NULL'))
        batch_op.drop_index(batch_op.f('ix_loans_warn_at'))
        batch_op.drop_index('ix_loans_system')
        batch_op.drop_index('ix_loans_end_open', sqlite_where=sa.text('returned_at IS NULL'), postgresql_where=sa.text('returned_at IS NULL'))

    op.drop_table('loans')
    with op.batch_alter_table('pool_access_rules', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_pool_access_rules_pool_id'))

    op.drop_table('pool_access_rules')
    op.drop_table('pools')
    with op.batch_alter_table('outbox', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_outbox_next_attempt_at'))

    op.drop_table('outbox')
