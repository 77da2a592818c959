"""group members by user: authentication reads a user's groups in the same statement as the token

Revision ID: 0022
Revises: 0019
"""
from alembic import op

revision = '0022'
down_revision = '0019'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(op.f('ix_group_members_user_id'), 'group_members', ['user_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_group_members_user_id'), table_name='group_members')
