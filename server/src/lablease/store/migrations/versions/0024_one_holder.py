"""a system has one holder at a time, held by the database: bookings never overlap on SQLite either, an open
reservation of a system has its booking, and a recipe holding a system has its open reservation on it

Revision ID: 0024
Revises: 0023

Every holder of a system books its calendar (store/calendar.py): a manual or loan-held reservation, a recipe
(its reservation of kind `recipe`), a guest (its guest system's calendar), an advance reservation (the
system's calendar; the reservations and recipes made in it book the AR's slot calendar inside that booking).
So "one holder at any instant" is: (1) exclusive bookings of one resource never overlap — PostgreSQL's
exclusion constraint since 0001, SQLite triggers from here; (2) a reservation still open on a system has
its booking; (3) a recipe in a holding state (assigned, scheduled, waiting, installing, running) has an
open reservation on the very system it names, and that reservation cannot be returned or moved while the
recipe holds it. A holder that lost its booking (a running recipe whose reservation was returned, the
double booking this revision closes) is refused, whichever path tries it. Every refusal says "one holder";
the API answers it 409.

Refuses to upgrade a database that already breaks one of these, naming the rows to put right first.
"""
from alembic import op
import sqlalchemy as sa

revision = '0024'
down_revision = '0023'
branch_labels = None
depends_on = None

HOLDING = "('assigned', 'scheduled', 'waiting', 'installing', 'running')"

# The rows that break the rules, as (what, query returning ids), checked before any rule is added.
_BROKEN = [
    ("open reservations of a system without a booking",
     "SELECT id FROM reservations WHERE returned_at IS NULL AND system_id IS NOT NULL AND booking_id IS NULL"),
    ("recipes holding a system without an open reservation on it",
     f"SELECT r.id FROM recipes r LEFT JOIN reservations v ON v.id = r.reservation_id "
     f"WHERE r.status IN {HOLDING} AND (v.id IS NULL OR v.returned_at IS NOT NULL "
     f"OR r.system_id IS NULL OR v.system_id <> r.system_id)"),
    ("overlapping exclusive bookings",
     "SELECT a.id FROM bookings a JOIN bookings b ON a.resource_id = b.resource_id AND a.id < b.id "
     "AND a.exclusive AND b.exclusive AND (a.end_at IS NULL OR a.end_at > b.start_at) "
     "AND (b.end_at IS NULL OR b.end_at > a.start_at)"),
]

_SQLITE = [
    # (1) the latest exclusive booking of the resource starting before the new one's end must end by its start
    # (one probe of ix_bookings_resource_start_end, as store/calendar.py's check; the bookings already there
    # never overlap, so the latest is the only one that can)
    """CREATE TRIGGER bookings_one_holder_insert BEFORE INSERT ON bookings WHEN NEW.exclusive AND COALESCE((
        SELECT b.end_at IS NULL OR b.end_at > NEW.start_at FROM bookings b
        WHERE b.resource_id = NEW.resource_id AND b.exclusive AND (NEW.end_at IS NULL OR b.start_at < NEW.end_at)
        ORDER BY b.start_at DESC LIMIT 1), 0)
    BEGIN SELECT RAISE(ABORT, 'one holder: the booking overlaps another booking of the resource'); END""",
    """CREATE TRIGGER bookings_one_holder_update BEFORE UPDATE OF resource_id, start_at, end_at, exclusive
    ON bookings WHEN NEW.exclusive AND COALESCE((
        SELECT b.end_at IS NULL OR b.end_at > NEW.start_at FROM bookings b
        WHERE b.resource_id = NEW.resource_id AND b.exclusive AND b.id <> NEW.id
          AND (NEW.end_at IS NULL OR b.start_at < NEW.end_at)
        ORDER BY b.start_at DESC LIMIT 1), 0)
    BEGIN SELECT RAISE(ABORT, 'one holder: the booking overlaps another booking of the resource'); END""",
    # (2)
    """CREATE TRIGGER reservations_one_holder_booking_insert BEFORE INSERT ON reservations
    WHEN NEW.returned_at IS NULL AND NEW.system_id IS NOT NULL AND NEW.booking_id IS NULL
    BEGIN SELECT RAISE(ABORT, 'one holder: an open reservation of a system needs its booking'); END""",
    """CREATE TRIGGER reservations_one_holder_booking_update BEFORE UPDATE OF returned_at, system_id, booking_id
    ON reservations WHEN NEW.returned_at IS NULL AND NEW.system_id IS NOT NULL AND NEW.booking_id IS NULL
    BEGIN SELECT RAISE(ABORT, 'one holder: an open reservation of a system needs its booking'); END""",
    # (3) both sides: the recipe, and the reservation it holds
    f"""CREATE TRIGGER recipes_one_holder_insert BEFORE INSERT ON recipes WHEN NEW.status IN {HOLDING}
    AND NOT EXISTS (SELECT 1 FROM reservations v WHERE v.id = NEW.reservation_id AND v.returned_at IS NULL
                    AND v.system_id = NEW.system_id)
    BEGIN SELECT RAISE(ABORT, 'one holder: a recipe holding a system needs its open reservation on it'); END""",
    f"""CREATE TRIGGER recipes_one_holder_update BEFORE UPDATE OF status, system_id, reservation_id ON recipes
    WHEN NEW.status IN {HOLDING}
    AND NOT EXISTS (SELECT 1 FROM reservations v WHERE v.id = NEW.reservation_id AND v.returned_at IS NULL
                    AND v.system_id = NEW.system_id)
    BEGIN SELECT RAISE(ABORT, 'one holder: a recipe holding a system needs its open reservation on it'); END""",
    f"""CREATE TRIGGER reservations_one_holder_recipe BEFORE UPDATE OF returned_at, system_id ON reservations
    WHEN EXISTS (SELECT 1 FROM recipes r WHERE r.reservation_id = NEW.id AND r.status IN {HOLDING}
                 AND (NEW.returned_at IS NOT NULL OR NEW.system_id IS NOT r.system_id))
    BEGIN SELECT RAISE(ABORT, 'one holder: the reservation is held by an unfinished recipe; end the recipe'); END""",
]
_SQLITE_NAMES = ["bookings_one_holder_insert", "bookings_one_holder_update", "reservations_one_holder_booking_insert",
                 "reservations_one_holder_booking_update", "recipes_one_holder_insert", "recipes_one_holder_update",
                 "reservations_one_holder_recipe"]

_POSTGRESQL = [
    # (1) is the exclusion constraint bookings_no_overlap (0001); (2):
    "ALTER TABLE reservations ADD CONSTRAINT reservations_one_holder_booking "
    "CHECK (returned_at IS NOT NULL OR system_id IS NULL OR booking_id IS NOT NULL)",
    # (3)
    f"""CREATE FUNCTION recipes_one_holder() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF NEW.status IN {HOLDING} AND NOT EXISTS (
                SELECT 1 FROM reservations v WHERE v.id = NEW.reservation_id AND v.returned_at IS NULL
                AND v.system_id = NEW.system_id) THEN
            RAISE EXCEPTION 'one holder: a recipe holding a system needs its open reservation on it (recipe %)',
                NEW.id USING ERRCODE = 'check_violation';
        END IF;
        RETURN NEW;
    END $$""",
    f"""CREATE FUNCTION reservations_one_holder_recipe() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN
        IF EXISTS (SELECT 1 FROM recipes r WHERE r.reservation_id = NEW.id AND r.status IN {HOLDING}
                   AND (NEW.returned_at IS NOT NULL OR NEW.system_id IS DISTINCT FROM r.system_id)) THEN
            RAISE EXCEPTION 'one holder: reservation % is held by an unfinished recipe; end the recipe', NEW.id
                USING ERRCODE = 'check_violation';
        END IF;
        RETURN NEW;
    END $$""",
    "CREATE TRIGGER recipes_one_holder BEFORE INSERT OR UPDATE OF status, system_id, reservation_id ON recipes "
    "FOR EACH ROW EXECUTE FUNCTION recipes_one_holder()",
    "CREATE TRIGGER reservations_one_holder_recipe BEFORE UPDATE OF returned_at, system_id ON reservations "
    "FOR EACH ROW EXECUTE FUNCTION reservations_one_holder_recipe()",
]


def _refuse_broken() -> None:
    bind = op.get_bind()
    found = []
    for what, query in _BROKEN:
        ids = [row[0] for row in bind.execute(sa.text(query + " ORDER BY 1 LIMIT 20"))]
        if ids:
            found.append(f"{what}: {', '.join(str(i) for i in ids)}")
    if found:
        raise RuntimeError("cannot upgrade to 0024 (one holder per system): the database holds " + "; ".join(found)
                           + ". End those reservations or recipes (or remove the overlapping bookings) and run "
                           "lablease-server init again")


def upgrade() -> None:
    _refuse_broken()
    # what the checks of (3) look up on every return: the recipe holding a reservation (a handful of rows)
    op.create_index('ix_recipes_holding', 'recipes', ['reservation_id'], unique=False,
                    sqlite_where=sa.text(f"status IN {HOLDING}"), postgresql_where=sa.text(f"status IN {HOLDING}"))
    for statement in _POSTGRESQL if op.get_bind().dialect.name == "postgresql" else _SQLITE:
        op.execute(statement)


def downgrade() -> None:
    _drop_guards()
    op.drop_index('ix_recipes_holding', table_name='recipes')


def _drop_guards() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP TRIGGER reservations_one_holder_recipe ON reservations")
        op.execute("DROP TRIGGER recipes_one_holder ON recipes")
        op.execute("DROP FUNCTION reservations_one_holder_recipe()")
        op.execute("DROP FUNCTION recipes_one_holder()")
        op.execute("ALTER TABLE reservations DROP CONSTRAINT reservations_one_holder_booking")
        return
    for name in _SQLITE_NAMES:
        op.execute(f"DROP TRIGGER {name}")
