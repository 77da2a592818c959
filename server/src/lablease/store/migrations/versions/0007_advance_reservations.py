"""advance reservations: the AR, the systems it holds, and reservations made inside one

Revision ID: 0007
Revises: 0006
"""
from alembic import op
import sqlalchemy as sa
import lablease.store.types
from sqlalchemy import Text
from sqlalchemy.dialects import postgresql

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None

TIME = lablease.store.types.UTCDateTime(timezone=True)
JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), 'postgresql')


def upgrade() -> None:
    op.create_table('advance_reservations',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=128), nullable=True),
    sa.Column('owner_id', sa.Integer(), nullable=False),
    sa.Column('account', sa.String(length=128), nullable=True),
    sa.Column('start_at', TIME, nullable=False),
    sa.Column('end_at', TIME, nullable=False),
    sa.Column('state', sa.String(length=1), nullable=False),
    sa.Column('error_handling', sa.String(length=8), nullable=False),
    sa.Column('mail_events', sa.String(length=8), nullable=False),
    sa.Column('mail_to', JSON, nullable=False),
    sa.Column('acl', JSON, nullable=False),
    sa.Column('requirements', JSON, nullable=True),
    sa.Column('pools', JSON, nullable=False),
    sa.Column('hosts', JSON, nullable=False),
    sa.Column('count', sa.Integer(), nullable=False),
    sa.Column('error_reasons', JSON, nullable=False),
    sa.Column('submitted_at', TIME, nullable=False),
    sa.Column('changed_at', TIME, nullable=False),
    sa.Column('due_at', TIME, nullable=True),
    sa.ForeignKeyConstraint(['owner_id'], ['users.id'], name=op.f('fk_advance_reservations_owner_id_users')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_advance_reservations'))
    )
    op.create_index(op.f('ix_advance_reservations_due_at'), 'advance_reservations', ['due_at'], unique=False)
    op.create_index(op.f('ix_advance_reservations_name'), 'advance_reservations', ['name'], unique=False)
    op.create_index('ix_advance_reservations_state', 'advance_reservations', ['state'], unique=False)
    op.create_table('ar_systems',
    sa.Column('ar_id', sa.Integer(), nullable=False),
    sa.Column('system_id', sa.Integer(), nullable=False),
    sa.Column('booking_id', sa.Integer(), nullable=True),
    sa.Column('slot_resource_id', sa.Integer(), nullable=False),
    sa.Column('lab', sa.String(length=64), nullable=True),
    sa.ForeignKeyConstraint(['ar_id'], ['advance_reservations.id'], name=op.f('fk_ar_systems_ar_id_advance_reservations'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['booking_id'], ['bookings.id'], name=op.f('fk_ar_systems_booking_id_bookings'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['slot_resource_id'], ['resources.id'], name=op.f('fk_ar_systems_slot_resource_id_resources')),
    sa.ForeignKeyConstraint(['system_id'], ['systems.id'], name=op.f('fk_ar_systems_system_id_systems'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('ar_id', 'system_id', name=op.f('pk_ar_systems'))
    )
    op.create_index(op.f('ix_ar_systems_system_id'), 'ar_systems', ['system_id'], unique=False)
    with op.batch_alter_table('reservations', schema=None) as batch_op:
        batch_op.add_column(sa.Column('ar_id', sa.Integer(), nullable=True))
        batch_op.create_foreign_key(batch_op.f('fk_reservations_ar_id_advance_reservations'), 'advance_reservations',
                                    ['ar_id'], ['id'], ondelete='SET NULL')


def downgrade() -> None:
    with op.batch_alter_table('reservations', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_reservations_ar_id_advance_reservations'), type_='foreignkey')
        batch_op.drop_column('ar_id')
    op.drop_index(op.f('ix_ar_systems_system_id'), table_name='ar_systems')
    op.drop_table('ar_systems')
    op.drop_index('ix_advance_reservations_state', table_name='advance_reservations')
    op.drop_index(op.f('ix_advance_reservations_name'), table_name='advance_reservations')
    op.drop_index(op.f('ix_advance_reservations_due_at'), table_name='advance_reservations')
    op.drop_table('advance_reservations')
