"""the directory's marks: which groups and users come from the site's LDAP directory

A group with a `directory_dn` is the directory's: its members follow the directory (synced at sign-in and
by the worker) and cannot be edited by hand. A user with a `directory_dn` signs in with the directory's
password; `display_name` is the name the directory gives them (docs/access.md, "Directory and Kerberos
sign-in"). Existing rows are lablease's own (NULL): nothing changes for them.

Revision ID: 0029
Revises: 0028
"""
from alembic import op
import sqlalchemy as sa

revision = '0029'
down_revision = '0028'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("groups") as batch:
        batch.add_column(sa.Column("directory_dn", sa.String(1000), nullable=True))
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("directory_dn", sa.String(1000), nullable=True))
        batch.add_column(sa.Column("display_name", sa.String(200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.drop_column("display_name")
        batch.drop_column("directory_dn")
    with op.batch_alter_table("groups") as batch:
        batch.drop_column("directory_dn")
