"""one netboot MAC per system, in one spelling (a unique index over the MAC's digits)

Two systems sharing a MAC (52:54:00:bb:00:01 and 52:54:00:BB:00:01) meant provisioning one wrote the
other's boot file. The stored MACs are rewritten in the one spelling the application keeps (lower-case,
colons); MACs two systems share are refused, naming each, and nothing is changed until an administrator
gives each system its own (docs/deployment.md, "Upgrades").

Revision ID: 0025
Revises: 0024
"""
import re

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from lablease.store.migrate import UpgradeRefused

revision = '0025'
down_revision = '0024'
branch_labels = None
depends_on = None

_SYSTEMS = sa.table("systems", sa.column("id", sa.Integer), sa.column("fqdn", sa.String),
                    sa.column("netboot", sa.JSON().with_variant(postgresql.JSONB(), "postgresql")))
_SPELLINGS = re.compile(r"[0-9a-f]{2}([:-])[0-9a-f]{2}(\1[0-9a-f]{2}){4}|[0-9a-f]{12}|[0-9a-f]{4}(\.[0-9a-f]{4}){2}")


def _key(netboot):
    """As tables.netboot_mac_key (copied: a migration keeps the expression it created)."""
    mac = sa.func.nullif(sa.type_coerce(netboot, sa.JSON)["mac"].as_string(), "")
    return sa.func.lower(sa.func.replace(sa.func.replace(sa.func.replace(mac, ":", ""), "-", ""), ".", ""))


def _digits(mac) -> str:
    return re.sub(r"[:.-]", "", str(mac).strip().lower())


def _spelt(mac) -> str:
    """The one spelling, for what reads as a MAC; anything else stays as it was (the index still compares it)."""
    text = mac.strip().lower() if isinstance(mac, str) else ""
    if not _SPELLINGS.fullmatch(text):
        return mac
    digits = _digits(text)
    return ":".join(digits[i:i + 2] for i in range(0, 12, 2))


def upgrade() -> None:
    connection = op.get_bind()
    rows = connection.execute(sa.select(_SYSTEMS.c.id, _SYSTEMS.c.fqdn, _SYSTEMS.c.netboot)
                              .order_by(_SYSTEMS.c.fqdn)).all()
    holders: dict[str, list] = {}
    for row in rows:
        mac = (row.netboot or {}).get("mac") if isinstance(row.netboot, dict) else None
        if mac not in (None, ""):
            holders.setdefault(_digits(mac), []).append(row)
    shared = {digits: found for digits, found in holders.items() if len(found) > 1}
    if shared:
        named = "; ".join(f"{_spelt(found[0].netboot['mac'])} on {', '.join(r.fqdn for r in found)}"
                          for _, found in sorted(shared.items()))
        raise UpgradeRefused(
            f"systems share a netboot MAC address, so provisioning one would write the other's boot file: "
            f"{named}. Nothing was changed: give each system its own MAC (or none) with the lablease you "
            "upgrade from, e.g. PATCH /api/v1/systems/FQDN {\"netboot\": {...}}, then run lablease-server init "
            "again (docs/deployment.md, \"Upgrades\")")
    for found in holders.values():
        row = found[0]
        spelt = _spelt(row.netboot["mac"])
        if spelt != row.netboot["mac"]:
            # only the MAC is rewritten: the settings' sealed secrets are carried as they are
            connection.execute(_SYSTEMS.update().where(_SYSTEMS.c.id == row.id)
                               .values(netboot={**row.netboot, "mac": spelt}))
    op.create_index("uq_systems_netboot_mac", "systems", [_key(sa.column("netboot", sa.JSON))], unique=True)


def downgrade() -> None:
    op.drop_index("uq_systems_netboot_mac", table_name="systems")
