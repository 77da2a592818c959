"""system health: health checks (job templates per system, pool or arch) and each system's health

Revision ID: 0018
Revises: 0017
"""
from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql
import lablease.store.types

revision = '0018'
down_revision = '0017'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table('health_checks',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=64), nullable=False),
    sa.Column('scope', sa.String(length=8), nullable=False),
    sa.Column('target', sa.String(length=255), nullable=False),
    sa.Column('job', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('source', sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), 'postgresql'), nullable=False),
    sa.Column('every_seconds', sa.Integer(), nullable=True),
    sa.Column('after_recipes', sa.Integer(), nullable=True),
    sa.Column('owner_id', sa.Integer(), nullable=True),
    sa.Column('created_at', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['owner_id'], ['users.id'], name=op.f('fk_health_checks_owner_id_users'),
                            ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_health_checks')),
    sa.UniqueConstraint('name', name=op.f('uq_health_checks_name')),
    sa.UniqueConstraint('scope', 'target', name='uq_health_checks_scope_target'),
    sqlite_autoincrement=True
    )
    op.create_table('system_health',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('system_id', sa.Integer(), nullable=False),
    sa.Column('state', sa.String(length=8), nullable=False),
    sa.Column('since', lablease.store.types.UTCDateTime(timezone=True), nullable=False),
    sa.Column('result', sa.Text(), nullable=True),
    sa.Column('last_check_at', lablease.store.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('passed_at', lablease.store.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('recipes_since', sa.Integer(), nullable=False),
    sa.Column('forced', sa.Boolean(), nullable=False),
    sa.Column('next_check_at', lablease.store.types.UTCDateTime(timezone=True), nullable=True),
    sa.Column('check_id', sa.Integer(), nullable=True),
    sa.Column('recipe_id', sa.Integer(), nullable=True),
    sa.ForeignKeyConstraint(['system_id'], ['systems.id'], name=op.f('fk_system_health_system_id_systems'),
                            ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['check_id'], ['health_checks.id'],
                            name=op.f('fk_system_health_check_id_health_checks'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['recipe_id'], ['recipes.id'], name=op.f('fk_system_health_recipe_id_recipes'),
                            ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_system_health')),
    sa.UniqueConstraint('system_id', name=op.f('uq_system_health_system_id')),
    sqlite_autoincrement=True
    )
    op.create_index('ix_system_health_next_check_at', 'system_health', ['next_check_at'], unique=False)
    op.create_index(op.f('ix_system_health_recipe_id'), 'system_health', ['recipe_id'], unique=False)


def downgrade() -> None:
    op.drop_index(op.f('ix_system_health_recipe_id'), table_name='system_health')
    op.drop_index('ix_system_health_next_check_at', table_name='system_health')
    op.drop_table('system_health')
    op.drop_table('health_checks')
