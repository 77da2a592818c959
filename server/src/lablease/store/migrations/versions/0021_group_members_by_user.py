"""group members by user: authentication reads a user's groups in the same statement as the token

Revision ID: 0021
Revises: 0020
"""
from alembic import op

revision = '0021'
down_revision = '0020'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(op.f('ix_group_members_user_id'), 'group_members', ['user_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_group_members_user_id'), table_name='group_members')
