"""Indexes for "which systems are free": a covering (resource, start, end) index; on
PostgreSQL also a GiST over the booking's range. Recipes by status (the holders).

Revision ID: 0004
Revises: 0003
"""
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("bookings", schema=None) as batch_op:
        batch_op.drop_index("ix_bookings_resource_start")
        batch_op.create_index("ix_bookings_resource_start_end", ["resource_id", "start_at", "end_at"], unique=False)
    if op.get_bind().dialect.name == "postgresql":
        op.execute("CREATE INDEX ix_bookings_range ON bookings USING gist (tstzrange(start_at, end_at))")
    with op.batch_alter_table("recipes", schema=None) as batch_op:
        batch_op.create_index("ix_recipes_status", ["status"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("recipes", schema=None) as batch_op:
        batch_op.drop_index("ix_recipes_status")
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP INDEX ix_bookings_range")
    with op.batch_alter_table("bookings", schema=None) as batch_op:
        batch_op.drop_index("ix_bookings_resource_start_end")
        batch_op.create_index("ix_bookings_resource_start", ["resource_id", "start_at"], unique=False)
