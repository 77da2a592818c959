"""architectures as data: the arches table, which systems and distro trees name

The list of architectures was closed (x86_64, aarch64, ...): ia64, ppc or s390 could not be added. It is
now a table an administrator extends (lablease-server arch add, POST /api/v1/arches), seeded with the arches
lablease knew and any other one a system or distro tree already names; systems.arch and distro_trees.arch
become foreign keys to it, so the database refuses an arch the site does not know.

Revision ID: 0028
Revises: 0027
"""
from alembic import op
import sqlalchemy as sa
import lablease.store.types

revision = '0028'
down_revision = '0027'
branch_labels = None
depends_on = None

REBUILD = {"sqlite_autoincrement": True}  # a SQLite rebuild keeps ids never reused (store/tables.py)
# domain.systems.ARCHES as it was (copied: a migration keeps the data it seeded)
SEEDED = ("x86_64", "aarch64", "ppc64le", "s390x", "i386", "ppc64", "armhfp", "riscv64")
NAMED = (("systems", "fk_systems_arch_arches"), ("distro_trees", "fk_distro_trees_arch_arches"))


def upgrade() -> None:
    arches = op.create_table('arches',
    sa.Column('name', sa.String(length=16), nullable=False),
    sa.Column('created_at', lablease.store.types.UTCDateTime(timezone=True), nullable=True),
    sa.PrimaryKeyConstraint('name', name=op.f('pk_arches'))
    )
    connection = op.get_bind()
    used = set()
    for table, _ in NAMED:
        used |= set(connection.execute(sa.text(f"SELECT DISTINCT arch FROM {table}")).scalars())
    op.bulk_insert(arches, [{"name": name, "created_at": None} for name in sorted(set(SEEDED) | used)])
    for table, name in NAMED:
        _with_netboot_index(table, lambda batch_op, name=name: batch_op.create_foreign_key(
            name, 'arches', ['arch'], ['name']))


def downgrade() -> None:
    for table, name in NAMED:
        _with_netboot_index(table, lambda batch_op, name=name: batch_op.drop_constraint(name, type_='foreignkey'))
    op.drop_table('arches')


def _with_netboot_index(table: str, change) -> None:
    """`change` in a batch (SQLite rebuilds the table). The rebuild does not carry the systems' unique index
    over an expression (migration 0025's): it is dropped first and made again after."""
    expression_index = table == "systems"
    if expression_index:
        op.drop_index("uq_systems_netboot_mac", table_name="systems")
    with op.batch_alter_table(table, schema=None, table_kwargs=REBUILD) as batch_op:
        change(batch_op)
    if expression_index:
        mac = sa.func.nullif(sa.type_coerce(sa.column("netboot", sa.JSON), sa.JSON)["mac"].as_string(), "")
        key = sa.func.lower(sa.func.replace(sa.func.replace(sa.func.replace(mac, ":", ""), "-", ""), ".", ""))
        op.create_index("uq_systems_netboot_mac", "systems", [key], unique=True)
