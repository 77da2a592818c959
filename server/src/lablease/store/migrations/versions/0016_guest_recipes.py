"""guest recipes: a recipe's host recipe, and guest systems

Revision ID: 0016
Revises: 0015
"""
from alembic import op
import sqlalchemy as sa

revision = '0016'
down_revision = '0015'
branch_labels = None
depends_on = None

REBUILD = {"sqlite_autoincrement": True}  # a SQLite rebuild keeps ids never reused (store/tables.py)


def upgrade() -> None:
    with op.batch_alter_table('recipes', schema=None, table_kwargs=REBUILD) as batch_op:
        batch_op.add_column(sa.Column('host_recipe_id', sa.Integer(), nullable=True))
        batch_op.create_index(batch_op.f('ix_recipes_host_recipe_id'), ['host_recipe_id'], unique=False)
        batch_op.create_foreign_key(batch_op.f('fk_recipes_host_recipe_id_recipes'), 'recipes',
                                    ['host_recipe_id'], ['id'], ondelete='CASCADE')
    with op.batch_alter_table('systems', schema=None, table_kwargs=REBUILD) as batch_op:
        batch_op.add_column(sa.Column('guest', sa.Boolean(), nullable=False, server_default=sa.false()))


def downgrade() -> None:
    with op.batch_alter_table('systems', schema=None, table_kwargs=REBUILD) as batch_op:
        batch_op.drop_column('guest')
    with op.batch_alter_table('recipes', schema=None, table_kwargs=REBUILD) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_recipes_host_recipe_id_recipes'), type_='foreignkey')
        batch_op.drop_index(batch_op.f('ix_recipes_host_recipe_id'))
        batch_op.drop_column('host_recipe_id')
