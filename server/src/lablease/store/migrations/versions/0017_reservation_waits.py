"""waiting reservations: a reservation without a system yet, and what it waits for

Revision ID: 0017
Revises: 0016
"""
from alembic import op
import sqlalchemy as sa

import lablease.store.types

UTCDateTime = lablease.store.types.UTCDateTime

revision = '0017'
down_revision = '0016'
branch_labels = None
depends_on = None

REBUILD = {"sqlite_autoincrement": True}  # a SQLite rebuild keeps ids never reused (store/tables.py)


def upgrade() -> None:
    with op.batch_alter_table('reservations', schema=None, table_kwargs=REBUILD) as batch_op:
        batch_op.alter_column('system_id', existing_type=sa.Integer(), nullable=True)
    op.create_table(
        'reservation_waits',
        sa.Column('reservation_id', sa.Integer(), nullable=False),
        sa.Column('class_id', sa.Integer(), nullable=False),
        sa.Column('priority', sa.Integer(), nullable=False),
        sa.Column('queued_at', UTCDateTime(timezone=True), nullable=False),
        sa.Column('duration_seconds', sa.Integer(), nullable=True),
        sa.Column('take_by_seconds', sa.Integer(), nullable=True),
        sa.Column('status', sa.String(length=16), nullable=False),
        sa.Column('granted_at', UTCDateTime(timezone=True), nullable=True),
        sa.Column('confirmed_at', UTCDateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(['class_id'], ['requirement_classes.id'],
                                name=op.f('fk_reservation_waits_class_id_requirement_classes'), ondelete='CASCADE'),
        sa.ForeignKeyConstraint(['reservation_id'], ['reservations.id'],
                                name=op.f('fk_reservation_waits_reservation_id_reservations'), ondelete='CASCADE'),
        sa.PrimaryKeyConstraint('reservation_id', name=op.f('pk_reservation_waits')),
    )
    op.create_index('ix_reservation_waits_queue', 'reservation_waits',
                    ['class_id', 'status', 'priority', 'queued_at', 'reservation_id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_reservation_waits_queue', table_name='reservation_waits')
    op.drop_table('reservation_waits')
    op.execute("DELETE FROM reservations WHERE system_id IS NULL")  # waits that never got a system
    with op.batch_alter_table('reservations', schema=None, table_kwargs=REBUILD) as batch_op:
        batch_op.alter_column('system_id', existing_type=sa.Integer(), nullable=False)
