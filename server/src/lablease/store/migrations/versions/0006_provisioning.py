"""provisioning: installations, the command queue, systems' power state and release action

Revision ID: 0006
Revises: 0005
"""
from alembic import op
import sqlalchemy as sa
import lablease.store.types
from sqlalchemy import Text
from sqlalchemy.dialects import postgresql

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None

TIME = lablease.store.types.UTCDateTime(timezone=True)


def upgrade() -> None:
    op.create_table('installations',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('system_id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=True),
    sa.Column('reservation_id', sa.Integer(), nullable=True),
    sa.Column('recipe_id', sa.Integer(), nullable=True),
    sa.Column('distro_tree_id', sa.Integer(), nullable=True),
    sa.Column('distro', sa.JSON().with_variant(postgresql.JSONB(astext_type=Text()), 'postgresql'), nullable=False),
    sa.Column('ks_meta', sa.Text(), nullable=False),
    sa.Column('kernel_options', sa.Text(), nullable=False),
    sa.Column('kickstart', sa.Text(), nullable=False),
    sa.Column('nonce', sa.String(length=64), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('created_at', TIME, nullable=False),
    sa.Column('started_at', TIME, nullable=True),
    sa.Column('installed_at', TIME, nullable=True),
    sa.Column('finished_at', TIME, nullable=True),
    sa.Column('watchdog_at', TIME, nullable=True),
    sa.ForeignKeyConstraint(['distro_tree_id'], ['distro_trees.id'], name=op.f('fk_installations_distro_tree_id_distro_trees'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['recipe_id'], ['recipes.id'], name=op.f('fk_installations_recipe_id_recipes'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['reservation_id'], ['reservations.id'], name=op.f('fk_installations_reservation_id_reservations'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['system_id'], ['systems.id'], name=op.f('fk_installations_system_id_systems'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_installations_user_id_users'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_installations'))
    )
    op.create_index(op.f('ix_installations_recipe_id'), 'installations', ['recipe_id'], unique=False)
    op.create_index(op.f('ix_installations_system_id'), 'installations', ['system_id'], unique=False)
    op.create_index(op.f('ix_installations_watchdog_at'), 'installations', ['watchdog_at'], unique=False)
    op.create_table('commands',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('system_id', sa.Integer(), nullable=False),
    sa.Column('action', sa.String(length=24), nullable=False),
    sa.Column('status', sa.String(length=16), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=True),
    sa.Column('installation_id', sa.Integer(), nullable=True),
    sa.Column('power_key', sa.String(length=400), nullable=True),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('due_at', TIME, nullable=False),
    sa.Column('lease_until', TIME, nullable=True),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('created_at', TIME, nullable=False),
    sa.Column('started_at', TIME, nullable=True),
    sa.Column('finished_at', TIME, nullable=True),
    sa.ForeignKeyConstraint(['installation_id'], ['installations.id'], name=op.f('fk_commands_installation_id_installations'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['system_id'], ['systems.id'], name=op.f('fk_commands_system_id_systems'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_commands_user_id_users'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_commands'))
    )
    op.create_index('ix_commands_status_due', 'commands', ['status', 'due_at'], unique=False)
    op.create_index('ix_commands_system', 'commands', ['system_id', 'id'], unique=False)
    with op.batch_alter_table('systems', schema=None) as batch_op:
        batch_op.add_column(sa.Column('power_state', sa.String(length=8), nullable=False, server_default='unknown'))
        batch_op.add_column(sa.Column('release_action', sa.String(length=16), nullable=False,
                                      server_default='power_off'))
        batch_op.add_column(sa.Column('reprovision_distro_tree_id', sa.Integer(), nullable=True))
        batch_op.create_foreign_key(batch_op.f('fk_systems_reprovision_distro_tree_id_distro_trees'), 'distro_trees',
                                    ['reprovision_distro_tree_id'], ['id'], ondelete='SET NULL')


def downgrade() -> None:
    with op.batch_alter_table('systems', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_systems_reprovision_distro_tree_id_distro_trees'), type_='foreignkey')
        batch_op.drop_column('reprovision_distro_tree_id')
        batch_op.drop_column('release_action')
        batch_op.drop_column('power_state')
    op.drop_index('ix_commands_system', table_name='commands')
    op.drop_index('ix_commands_status_due', table_name='commands')
    op.drop_table('commands')
    op.drop_index(op.f('ix_installations_watchdog_at'), table_name='installations')
    op.drop_index(op.f('ix_installations_system_id'), table_name='installations')
    op.drop_index(op.f('ix_installations_recipe_id'), table_name='installations')
    op.drop_table('installations')
