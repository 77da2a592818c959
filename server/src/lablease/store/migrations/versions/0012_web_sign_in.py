"""web sign-in: a user's password hash (argon2) and the secret of their calendar feed

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
    with op.batch_alter_table('users', table_kwargs={"sqlite_autoincrement": True}) as batch_op:  # 0008: keep AUTOINCREMENT
        batch_op.add_column(sa.Column('password_hash', sa.String(length=255), nullable=True))
        batch_op.add_column(sa.Column('calendar_token', sa.String(length=1000), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table('users', table_kwargs={"sqlite_autoincrement": True}) as batch_op:  # 0008: keep AUTOINCREMENT
        batch_op.drop_column('calendar_token')
        batch_op.drop_column('password_hash')
