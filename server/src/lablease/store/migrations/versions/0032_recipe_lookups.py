"""recipe lookups that stay fast on a big history: a job's recipes by job, the guests index only over guests,
the sets holding systems; systems by condition

Measured by bench/beaker.py (100,000 finished jobs): reading a job's recipes scanned the table (no index on
job_id); with statistics, SQLite scanned it again for the few recipes holding systems (`status = 'assigned'`:
the status index looks like half the table per value); without them, it took the index of guest recipes for
`host_recipe_id IS NULL`, which matches every host recipe. The guests index now holds guests only, and a
small partial index lists the holding sets. The scheduler asks for a class's Automated candidates at every
recipe set queued: systems by condition take them from an index rather than from the whole lab.

Revision ID: 0032
Revises: 0031
"""
from alembic import op
import sqlalchemy as sa

revision = '0032'
down_revision = '0031'
branch_labels = None
depends_on = None

GUESTS = sa.text("host_recipe_id IS NOT NULL")
ASSIGNED = sa.text("status = 'assigned'")


def upgrade() -> None:
    op.create_index('ix_systems_condition', 'systems', ['condition'], unique=False)
    op.create_index('ix_recipes_job_id', 'recipes', ['job_id'], unique=False)
    op.drop_index('ix_recipes_host_recipe_id', table_name='recipes')
    op.create_index('ix_recipes_host_recipe_id', 'recipes', ['host_recipe_id'], unique=False,
                    sqlite_where=GUESTS, postgresql_where=GUESTS)
    op.create_index('ix_recipes_assigned', 'recipes', ['recipe_set_id'], unique=False,
                    sqlite_where=ASSIGNED, postgresql_where=ASSIGNED)


def downgrade() -> None:
    op.drop_index('ix_recipes_assigned', table_name='recipes')
    op.drop_index('ix_recipes_host_recipe_id', table_name='recipes')
    op.create_index('ix_recipes_host_recipe_id', 'recipes', ['host_recipe_id'], unique=False)
    op.drop_index('ix_recipes_job_id', table_name='recipes')
    op.drop_index('ix_systems_condition', table_name='systems')
