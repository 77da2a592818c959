"""job documents: each job keeps its normalised form (exported back as job XML) and its warnings

Revision ID: 0015
Revises: 0014
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = '0015'
down_revision = '0014'
branch_labels = None
depends_on = None

JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql')


def upgrade() -> None:
    with op.batch_alter_table('jobs') as batch_op:
        batch_op.add_column(sa.Column('document', JSON, nullable=True))
        batch_op.add_column(sa.Column('warnings', JSON, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('jobs', table_kwargs={"sqlite_autoincrement": True}) as batch_op:
        batch_op.drop_column('warnings')
        batch_op.drop_column('document')
