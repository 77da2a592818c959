"""system inventory: vendor, model, serial, type, hypervisor, CPU, disks, devices, NUMA nodes (Beaker's)

Revision ID: 0011
Revises: 0010
"""
from alembic import op
import sqlalchemy as sa
import lablease.store.types

revision = '0011'
down_revision = '0010'
branch_labels = None
depends_on = None

TEXT_COLUMNS = ('vendor', 'model', 'serial', 'location', 'lender')
JSON_COLUMNS = ('cpu', 'disks', 'devices')


def upgrade() -> None:
    with op.batch_alter_table('systems', schema=None, table_kwargs={"sqlite_autoincrement": True}) as batch_op:
        for name in TEXT_COLUMNS:
            batch_op.add_column(sa.Column(name, sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column('system_type', sa.String(length=16), nullable=False, server_default='Machine'))
        batch_op.add_column(sa.Column('hypervisor', sa.String(length=32), nullable=True))
        batch_op.add_column(sa.Column('numa_nodes', sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column('last_inventoried', lablease.store.types.UTCDateTime(timezone=True),
                                      nullable=True))
        for name in JSON_COLUMNS:
            batch_op.add_column(sa.Column(name, lablease.store.types.Json, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('systems', schema=None, table_kwargs={"sqlite_autoincrement": True}) as batch_op:
        for name in reversed(TEXT_COLUMNS + ('system_type', 'hypervisor', 'numa_nodes', 'last_inventoried')
                             + JSON_COLUMNS):
            batch_op.drop_column(name)
