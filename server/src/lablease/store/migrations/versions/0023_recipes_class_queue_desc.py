"""each requirement class's queue in scheduling order straight from its index (priority descending)

Revision ID: 0023
Revises: 0022
"""
from alembic import op
import sqlalchemy as sa

revision = '0023'
down_revision = '0022'
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Ascending priority made the database sort each class's whole top-priority group to read its first page
    # (services/queue/scheduling.py _class_queue): a cost that grew with the queue.
    op.drop_index('ix_recipes_class_queue', table_name='recipes')
    op.create_index('ix_recipes_class_queue', 'recipes',
                    ['class_id', 'status', sa.text('priority DESC'), 'queued_at', 'id'], unique=False)


def downgrade() -> None:
    op.drop_index('ix_recipes_class_queue', table_name='recipes')
    op.create_index('ix_recipes_class_queue', 'recipes', ['class_id', 'status', 'priority', 'queued_at', 'id'],
                    unique=False)
