"""the queue's multi-host sets in scheduling order, for the scheduler's head of the queue

Revision ID: 0020
Revises: 0019
"""
from alembic import op
import sqlalchemy as sa

revision = '0020'
down_revision = '0019'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index('ix_recipe_sets_head', 'recipe_sets',
                    ['multi', 'status', sa.text('priority DESC'), 'queued_at', 'id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_recipe_sets_head', table_name='recipe_sets')
