"""web sign-in: a user's password hash (argon2id) and the secret of their calendar feed

Revision ID: 0012
Revises: 0010
"""
from alembic import op
import sqlalchemy as sa

revision = '0012'
down_revision = '0010'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('web_logins',
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('password_hash', sa.String(length=255), nullable=True),
    sa.Column('calendar_token', sa.String(length=1000), nullable=True),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_web_logins_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('user_id', name=op.f('pk_web_logins'))
    )


def downgrade() -> None:
    op.drop_table('web_logins')
