"""The Alembic migrations build exactly the schema the models describe."""
import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext
from sqlalchemy import text

from lablease.store.migrate import current_revision, head_revision
from lablease.store.tables import Base


# PostgreSQL-only objects that migrations add and the models cannot express:
# the exclusion constraint's partner GiST over the booking range.
MIGRATION_ONLY = {"ix_bookings_range"}
# Indexes over an expression, which SQLite's reflection cannot read back: what they refuse is tested instead
# (test_the_netboot_mac_index_refuses_a_shared_mac_written_behind_the_application).
EXPRESSION_INDEXES = {"uq_systems_netboot_mac"}


def _modelled(obj, name, type_, reflected, compare_to):
    return name not in MIGRATION_ONLY | EXPRESSION_INDEXES


@pytest.mark.filterwarnings("ignore:Skipped unsupported reflection of expression-based index uq_systems_netboot_mac")
@pytest.mark.filterwarnings("ignore:autogenerate skipping metadata-specified expression-based index "
                            "'uq_systems_netboot_mac'")
def test_migrations_and_models_agree(db):
    assert current_revision(db) == head_revision()
    with db.reader.connect() as connection:
        context = MigrationContext.configure(connection, opts={"compare_type": True, "include_object": _modelled})
        diff = compare_metadata(context, Base.metadata)
    assert diff == []


def test_postgresql_has_the_exclusion_constraint(db):
    if not db.is_postgresql:
        return
    with db.writer.connect() as connection:
        found = connection.execute(text(
            "SELECT conname FROM pg_constraint WHERE contype = 'x' AND conrelid = 'bookings'::regclass")).scalars().all()
    assert found == ["bookings_no_overlap"]


def test_the_exclusion_constraint_refuses_an_overlap_written_behind_the_application(db):
    """Second line of defence: even a raw insert cannot double-book on PostgreSQL."""
    if not db.is_postgresql:
        return
    from sqlalchemy.exc import IntegrityError

    with db.writer.begin() as connection:
        connection.execute(text("INSERT INTO resources (kind, name, capacity) VALUES ('system', 'x', 1)"))
        rid = connection.execute(text("SELECT id FROM resources WHERE name = 'x'")).scalar_one()
        insert = text("INSERT INTO bookings (resource_id, start_at, end_at, quantity, exclusive, kind, created_at) "
                      "VALUES (:r, :s, :e, 1, true, 'reservation', now())")
        connection.execute(insert, {"r": rid, "s": "2026-01-01T00:00Z", "e": "2026-01-01T02:00Z"})
    with pytest.raises(IntegrityError):
        with db.writer.begin() as connection:
            connection.execute(insert, {"r": rid, "s": "2026-01-01T01:00Z", "e": "2026-01-01T03:00Z"})


def test_the_netboot_mac_index_refuses_a_shared_mac_written_behind_the_application(db):
    """Two systems never share a netboot MAC, whatever its spelling, even written in raw SQL (SQLite and
    PostgreSQL); systems without one (none, null, empty) are many."""
    from sqlalchemy.exc import IntegrityError

    def add(connection, ident: int, netboot: str) -> None:
        connection.execute(text("INSERT INTO resources (id, kind, name, capacity) VALUES (:i, 'system', :n, 1)"),
                           {"i": ident, "n": f"m{ident}"})
        connection.execute(text("INSERT INTO systems (id, resource_id, fqdn, arch, attributes, condition, usage, "
                                "power, netboot, power_state, release_action, guest, created_at, system_type) "
                                "VALUES (:i, :i, :n, 'x86_64', '{}', 'manual', 'idle', '{}', :b, 'unknown', "
                                "'power_off', false, '2026-01-01T00:00:00Z', 'Machine')"),
                           {"i": ident, "n": f"m{ident}", "b": netboot})

    with db.writer.begin() as connection:
        add(connection, 901, '{"mac": "52:54:00:bb:00:01"}')
        for ident, netboot in enumerate(('{}', '{"mac": null}', '{"mac": ""}', '{}'), start=902):
            add(connection, ident, netboot)
    for spelling in ("52:54:00:bb:00:01", "52:54:00:BB:00:01", "52-54-00-bb-00-01", "525400BB0001"):
        with pytest.raises(IntegrityError):
            with db.writer.begin() as connection:
                add(connection, 910, '{"mac": "%s"}' % spelling)


def test_a_system_or_distro_tree_of_an_unknown_arch_is_refused_written_behind_the_application(db):
    """systems.arch and distro_trees.arch name a row of arches (migration 0028), on SQLite and PostgreSQL."""
    from sqlalchemy.exc import IntegrityError

    tree = ("INSERT INTO distro_trees (id, name, arch, tags, url, kernel, initrd, labs, created_at) VALUES "
            "(:i, 'T', :a, '[]', 'http://m/os/', 'k', 'i', '[]', '2026-01-01T00:00:00Z')")
    with db.writer.begin() as connection:
        connection.execute(text(tree), {"i": 1, "a": "s390x"})
    with pytest.raises(IntegrityError):
        with db.writer.begin() as connection:
            connection.execute(text(tree), {"i": 2, "a": "ia64"})
    with pytest.raises(IntegrityError):
        with db.writer.begin() as connection:
            connection.execute(text("INSERT INTO resources (id, kind, name, capacity) VALUES (1, 'system', 'a', 1)"))
            connection.execute(text(
                "INSERT INTO systems (id, resource_id, fqdn, arch, attributes, condition, usage, power, netboot, "
                "power_state, release_action, guest, created_at, system_type) VALUES (1, 1, 'a', 'ia64', '{}', "
                "'manual', 'idle', '{}', '{}', 'unknown', 'power_off', false, '2026-01-01T00:00:00Z', 'Machine')"))
    with db.writer.begin() as connection:
        connection.execute(text("INSERT INTO arches (name) VALUES ('ia64')"))
        connection.execute(text(tree), {"i": 2, "a": "ia64"})
