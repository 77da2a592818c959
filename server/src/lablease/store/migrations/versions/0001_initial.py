"""initial schema

Revision ID: 0001
Revises:
Create Date: 2026-11-22 03:51:15.744420
"""
from alembic import op
import sqlalchemy as sa
import lablease.store.types
from sqlalchemy.dialects import postgresql
from sqlalchemy import Text

revision = '0001'
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('groups',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=64), nullable=False),
    sa.Column('description', sa.Text(), nullable=True),
    sa.Column('created_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_groups')),
    sa.UniqueConstraint('name', name=op.f('uq_groups_name'))
    )
    op.create_table('resources',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('name', sa.String(length=400), nullable=False),
    sa.Column('capacity', sa.Integer(), nullable=False),
    sa.CheckConstraint('capacity >= 1', name=op.f('ck_resources_capacity_positive')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_resources')),
    sa.UniqueConstraint('kind', 'name', name='uq_resources_kind_name')
    )
    op.create_table('schedule_subjects',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=64), nullable=False),
    sa.Column('default_duration_seconds', sa.Integer(), nullable=False),
    sa.Column('created_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_schedule_subjects')),
    sa.UniqueConstraint('name', name=op.f('uq_schedule_subjects_name'))
    )
    op.create_table('users',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=64), nullable=False),
    sa.Column('email', sa.String(length=254), nullable=True),
    sa.Column('is_admin', sa.Boolean(), nullable=False),
    sa.Column('disabled', sa.Boolean(), nullable=False),
    sa.Column('created_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_users')),
    sa.UniqueConstraint('name', name=op.f('uq_users_name'))
    )
    op.create_table('activity',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=True),
    sa.Column('user_name', sa.String(length=64), nullable=False),
    sa.Column('object_type', sa.String(length=32), nullable=False),
    sa.Column('object_id', sa.String(length=255), nullable=False),
    sa.Column('action', sa.String(length=32), nullable=False),
    sa.Column('field', sa.String(length=64), nullable=True),
    sa.Column('old', sa.Text(), nullable=True),
    sa.Column('new', sa.Text(), nullable=True),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_activity_user_id_users'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_activity'))
    )
    with op.batch_alter_table('activity', schema=None) as batch_op:
        batch_op.create_index('ix_activity_object', ['object_type', 'object_id', 'id'], unique=False)

    op.create_table('bookings',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('resource_id', sa.Integer(), nullable=False),
    sa.Column('start_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('end_at', lablease.store.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('quantity', sa.Integer(), nullable=False),
    sa.Column('exclusive', sa.Boolean(), nullable=False),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=True),
    sa.Column('created_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.CheckConstraint('end_at IS NULL OR end_at > start_at', name=op.f('ck_bookings_end_after_start')),
    sa.CheckConstraint('quantity >= 1', name=op.f('ck_bookings_quantity_positive')),
    sa.ForeignKeyConstraint(['resource_id'], ['resources.id'], name=op.f('fk_bookings_resource_id_resources'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_bookings_user_id_users'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_bookings'))
    )
    with op.batch_alter_table('bookings', schema=None) as batch_op:
        batch_op.create_index('ix_bookings_resource_start', ['resource_id', 'start_at'], unique=False)

    op.create_table('group_members',
    sa.Column('group_id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('is_owner', sa.Boolean(), nullable=False),
    sa.ForeignKeyConstraint(['group_id'], ['groups.id'], name=op.f('fk_group_members_group_id_groups'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_group_members_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('group_id', 'user_id', name=op.f('pk_group_members'))
    )
    op.create_table('systems',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('resource_id', sa.Integer(), nullable=False),
    sa.Column('fqdn', sa.String(length=255), nullable=False),
    sa.Column('arch', sa.String(length=16), nullable=False),
    sa.Column('cpus', sa.Integer(), nullable=True),
    sa.Column('memory_mb', sa.Integer(), nullable=True),
    sa.Column('lab', sa.String(length=64), nullable=True),
    sa.Column('attributes', sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), 'postgresql'), nullable=False),
    sa.Column('condition', sa.String(length=16), nullable=False),
    sa.Column('usage', sa.String(length=16), nullable=False),
    sa.Column('owner_id', sa.Integer(), nullable=True),
    sa.Column('power', sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), 'postgresql'), nullable=False),
    sa.Column('netboot', sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), 'postgresql'), nullable=False),
    sa.Column('created_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['owner_id'], ['users.id'], name=op.f('fk_systems_owner_id_users'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['resource_id'], ['resources.id'], name=op.f('fk_systems_resource_id_resources')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_systems')),
    sa.UniqueConstraint('fqdn', name=op.f('uq_systems_fqdn')),
    sa.UniqueConstraint('resource_id', name=op.f('uq_systems_resource_id'))
    )
    op.create_table('tokens',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=64), nullable=False),
    sa.Column('token_hash', sa.String(length=64), nullable=False),
    sa.Column('created_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('expires_at', lablease.store.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('revoked_at', lablease.store.types.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_tokens_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_tokens')),
    sa.UniqueConstraint('token_hash', name=op.f('uq_tokens_token_hash'))
    )
    with op.batch_alter_table('tokens', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_tokens_user_id'), ['user_id'], unique=False)

    op.create_table('access_rules',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('system_id', sa.Integer(), nullable=False),
    sa.Column('permission', sa.String(length=32), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=True),
    sa.Column('group_id', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['group_id'], ['groups.id'], name=op.f('fk_access_rules_group_id_groups'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['system_id'], ['systems.id'], name=op.f('fk_access_rules_system_id_systems'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_access_rules_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_access_rules'))
    )
    with op.batch_alter_table('access_rules', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_access_rules_system_id'), ['system_id'], unique=False)

    op.create_table('reservations',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('system_id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('booking_id', sa.Integer(), nullable=True),
    sa.Column('kind', sa.String(length=16), nullable=False),
    sa.Column('start_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('end_at', lablease.store.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('returned_at', lablease.store.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('return_reason', sa.String(length=16), nullable=True),
    sa.Column('return_loan', sa.Boolean(), nullable=False),
    sa.Column('heartbeat_seconds', sa.Integer(), nullable=True),
    sa.Column('last_heartbeat_at', lablease.store.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('due_at', lablease.store.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('request_id', sa.String(length=128), nullable=True),
    sa.Column('created_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['booking_id'], ['bookings.id'], name=op.f('fk_reservations_booking_id_bookings'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['system_id'], ['systems.id'], name=op.f('fk_reservations_system_id_systems'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_reservations_user_id_users')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_reservations')),
    sa.UniqueConstraint('user_id', 'request_id', name='uq_reservations_user_request')
    )
    with op.batch_alter_table('reservations', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_reservations_due_at'), ['due_at'], unique=False)
        batch_op.create_index(batch_op.f('ix_reservations_system_id'), ['system_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_reservations_user_id'), ['user_id'], unique=False)

    op.create_table('schedule_reservations',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('subject_id', sa.Integer(), nullable=False),
    sa.Column('resource_name', sa.String(length=255), nullable=False),
    sa.Column('resource_spec', sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), 'postgresql'), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('slice', sa.String(length=255), nullable=True),
    sa.Column('start_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('end_at', lablease.store.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('quantity', sa.Integer(), nullable=False),
    sa.Column('booking_id', sa.Integer(), nullable=True),
    sa.Column('cancelled_at', lablease.store.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('created_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['booking_id'], ['bookings.id'], name=op.f('fk_schedule_reservations_booking_id_bookings'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['subject_id'], ['schedule_subjects.id'], name=op.f('fk_schedule_reservations_subject_id_schedule_subjects'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_schedule_reservations_user_id_users')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_schedule_reservations'))
    )
    with op.batch_alter_table('schedule_reservations', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_schedule_reservations_subject_id'), ['subject_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_schedule_reservations_user_id'), ['user_id'], unique=False)

    if op.get_bind().dialect.name == "postgresql":
        # The second line of defence against double booking: exclusive bookings of
        # one resource cannot overlap, whatever the application does.
        op.execute("CREATE EXTENSION IF NOT EXISTS btree_gist")
        op.execute(
            "ALTER TABLE bookings ADD CONSTRAINT bookings_no_overlap EXCLUDE USING gist "
            "(resource_id WITH =, tstzrange(start_at, end_at) WITH &&) WHERE (exclusive)"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("ALTER TABLE bookings DROP CONSTRAINT bookings_no_overlap")
    with op.batch_alter_table('schedule_reservations', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_schedule_reservations_user_id'))
        batch_op.drop_index(batch_op.f('ix_schedule_reservations_subject_id'))

    op.drop_table('schedule_reservations')
    with op.batch_alter_table('reservations', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_reservations_user_id'))
        batch_op.drop_index(batch_op.f('ix_reservations_system_id'))
        batch_op.drop_index(batch_op.f('ix_reservations_due_at'))

    op.drop_table('reservations')
    with op.batch_alter_table('access_rules', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_access_rules_system_id'))

    op.drop_table('access_rules')
    with op.batch_alter_table('tokens', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_tokens_user_id'))

    op.drop_table('tokens')
    op.drop_table('systems')
    op.drop_table('group_members')
    with op.batch_alter_table('bookings', schema=None) as batch_op:
        batch_op.drop_index('ix_bookings_resource_start')

    op.drop_table('bookings')
    with op.batch_alter_table('activity', schema=None) as batch_op:
        batch_op.drop_index('ix_activity_object')

    op.drop_table('activity')
    op.drop_table('users')
    op.drop_table('schedule_subjects')
    op.drop_table('resources')
    op.drop_table('groups')
