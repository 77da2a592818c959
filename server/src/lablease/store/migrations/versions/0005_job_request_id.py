"""A client-chosen request id on jobs, unique per owner among unfinished jobs.

Revision ID: 0005
Revises: 0004
"""
import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

WHERE = "finished_at IS NULL AND request_id IS NOT NULL"


def upgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.add_column(sa.Column("request_id", sa.String(length=128), nullable=True))
        batch_op.create_index("uq_jobs_unfinished_request", ["owner_id", "request_id"], unique=True,
                              sqlite_where=sa.text(WHERE), postgresql_where=sa.text(WHERE))


def downgrade() -> None:
    with op.batch_alter_table("jobs", schema=None) as batch_op:
        batch_op.drop_index("uq_jobs_unfinished_request", sqlite_where=sa.text(WHERE), postgresql_where=sa.text(WHERE))
        batch_op.drop_column("request_id")
