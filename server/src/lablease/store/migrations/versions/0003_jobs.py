"""jobs

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 04:24:17.680744
"""
from alembic import op
import sqlalchemy as sa
import lablease.store.types
from sqlalchemy import Text
from sqlalchemy.dialects import postgresql

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('distro_trees',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=128), nullable=False),
    sa.Column('family', sa.String(length=64), nullable=True),
    sa.Column('arch', sa.String(length=16), nullable=False),
    sa.Column('variant', sa.String(length=64), nullable=True),
    sa.Column('tags', sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), 'postgresql'), nullable=False),
    sa.Column('url', sa.String(length=2000), nullable=False),
    sa.Column('kernel', sa.String(length=400), nullable=False),
    sa.Column('initrd', sa.String(length=400), nullable=False),
    sa.Column('ks_meta', sa.Text(), nullable=True),
    sa.Column('kernel_options', sa.Text(), nullable=True),
    sa.Column('labs', sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), 'postgresql'), nullable=False),
    sa.Column('created_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_distro_trees')),
    sa.UniqueConstraint('name', 'arch', 'variant', name='uq_distro_trees_name_arch_variant')
    )
    op.create_table('jobs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('owner_id', sa.Integer(), nullable=False),
    sa.Column('group_id', sa.Integer(), nullable=True),
    sa.Column('whiteboard', sa.Text(), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('result', sa.String(length=8), nullable=False),
    sa.Column('submitted_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('finished_at', lablease.store.types.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['group_id'], ['groups.id'], name=op.f('fk_jobs_group_id_groups'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['owner_id'], ['users.id'], name=op.f('fk_jobs_owner_id_users')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_jobs'))
    )
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_jobs_owner_id'), ['owner_id'], unique=False)

    op.create_table('requirement_classes',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('key', sa.String(length=64), nullable=False),
    sa.Column('owner_id', sa.Integer(), nullable=False),
    sa.Column('spec', sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), 'postgresql'), nullable=False),
    sa.Column('created_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['owner_id'], ['users.id'], name=op.f('fk_requirement_classes_owner_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_requirement_classes')),
    sa.UniqueConstraint('key', name=op.f('uq_requirement_classes_key'))
    )
    op.create_table('recipe_sets',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('job_id', sa.Integer(), nullable=False),
    sa.Column('priority', sa.Integer(), nullable=False),
    sa.Column('ar_id', sa.Integer(), nullable=True),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('result', sa.String(length=8), nullable=False),
    sa.Column('queued_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('multi', sa.Boolean(), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_recipe_sets_job_id_jobs'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_recipe_sets'))
    )
    with op.batch_alter_table('recipe_sets', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_recipe_sets_job_id'), ['job_id'], unique=False)
        batch_op.create_index('ix_recipe_sets_queue', ['multi', 'status', 'priority', 'queued_at'], unique=False)

    op.create_table('class_candidates',
    sa.Column('class_id', sa.Integer(), nullable=False),
    sa.Column('system_id', sa.Integer(), nullable=False),
    sa.Column('rank', sa.Integer(), nullable=False),
    sa.ForeignKeyConstraint(['class_id'], ['requirement_classes.id'], name=op.f('fk_class_candidates_class_id_requirement_classes'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['system_id'], ['systems.id'], name=op.f('fk_class_candidates_system_id_systems'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('class_id', 'system_id', name=op.f('pk_class_candidates'))
    )
    with op.batch_alter_table('class_candidates', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_class_candidates_system_id'), ['system_id'], unique=False)

    op.create_table('usage_history',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('system_id', sa.Integer(), nullable=False),
    sa.Column('at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('field', sa.String(length=16), nullable=False),
    sa.Column('old', sa.String(length=16), nullable=True),
    sa.Column('new', sa.String(length=16), nullable=False),
    sa.ForeignKeyConstraint(['system_id'], ['systems.id'], name=op.f('fk_usage_history_system_id_systems'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_usage_history'))
    )
    with op.batch_alter_table('usage_history', schema=None) as batch_op:
        batch_op.create_index('ix_usage_history_system_at', ['system_id', 'at'], unique=False)

    op.create_table('recipes',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('recipe_set_id', sa.Integer(), nullable=False),
    sa.Column('job_id', sa.Integer(), nullable=False),
    sa.Column('spec', sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), 'postgresql'), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('result', sa.String(length=8), nullable=False),
    sa.Column('class_id', sa.Integer(), nullable=True),
    sa.Column('priority', sa.Integer(), nullable=False),
    sa.Column('queued_at', lablease.store.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('system_id', sa.Integer(), nullable=True),
    sa.Column('reservation_id', sa.Integer(), nullable=True),
    sa.Column('distro_tree_id', sa.Integer(), nullable=True),
    sa.Column('task_results', sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), 'postgresql'), nullable=False),
    sa.Column('started_at', lablease.store.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('finished_at', lablease.store.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('watchdog_at', lablease.store.types.UTCDateTime(timezone=True), nullable=True),
    sa.ForeignKeyConstraint(['class_id'], ['requirement_classes.id'], name=op.f('fk_recipes_class_id_requirement_classes'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['distro_tree_id'], ['distro_trees.id'], name=op.f('fk_recipes_distro_tree_id_distro_trees'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_recipes_job_id_jobs'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['recipe_set_id'], ['recipe_sets.id'], name=op.f('fk_recipes_recipe_set_id_recipe_sets'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['reservation_id'], ['reservations.id'], name=op.f('fk_recipes_reservation_id_reservations'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['system_id'], ['systems.id'], name=op.f('fk_recipes_system_id_systems'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_recipes'))
    )
    with op.batch_alter_table('recipes', schema=None) as batch_op:
        batch_op.create_index('ix_recipes_class_queue', ['class_id', 'status', 'priority', 'queued_at', 'id'], unique=False)
        batch_op.create_index(batch_op.f('ix_recipes_recipe_set_id'), ['recipe_set_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_recipes_system_id'), ['system_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_recipes_watchdog_at'), ['watchdog_at'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('recipes', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_recipes_watchdog_at'))
        batch_op.drop_index(batch_op.f('ix_recipes_system_id'))
        batch_op.drop_index(batch_op.f('ix_recipes_recipe_set_id'))
        batch_op.drop_index('ix_recipes_class_queue')

    op.drop_table('recipes')
    with op.batch_alter_table('usage_history', schema=None) as batch_op:
        batch_op.drop_index('ix_usage_history_system_at')

    op.drop_table('usage_history')
    with op.batch_alter_table('class_candidates', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_class_candidates_system_id'))

    op.drop_table('class_candidates')
    with op.batch_alter_table('recipe_sets', schema=None) as batch_op:
        batch_op.drop_index('ix_recipe_sets_queue')
        batch_op.drop_index(batch_op.f('ix_recipe_sets_job_id'))

    op.drop_table('recipe_sets')
    op.drop_table('requirement_classes')
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_jobs_owner_id'))

    op.drop_table('jobs')
    op.drop_table('distro_trees')
