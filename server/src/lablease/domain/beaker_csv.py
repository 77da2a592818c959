"""Beaker's CSV exchange (Admin -> Export / Import), mapped to and from what lablease keeps. Pure.

Beaker writes one CSV file per kind of data; every row names its kind in its
`csv_type` column, and the columns are Beaker's (bkr/server/CSV_import_export.py).
A row becomes lablease changes: the system rows, power rows and key/value
rows of one fqdn merge into one body for the system import use case (as
POST or PATCH /api/v1/systems takes it); system_pool and user_group rows
become pool and group memberships. What lablease does not keep (a system's
cc list, lab info, excluded families, install options, a second arch, a
power type without a lablease driver) is not imported: each becomes a note,
so the import names it. A row that cannot be read is refused by its line.

docs/beaker.md, "Importing Beaker's CSV", says what each column becomes.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

# Beaker's columns, per csv_type, in its order (the export writes them so).
SYSTEM_KEYS = ("fqdn", "lender", "location", "mac_address", "memory", "model", "serial", "vendor", "arch",
               "lab_controller", "owner", "status", "type", "cc")
COLUMNS = {
    "system": SYSTEM_KEYS,
    "system_id": ("id",) + SYSTEM_KEYS,
    "labinfo": ("fqdn", "orig_cost", "curr_cost", "dimensions", "weight", "wattage", "cooling"),
    "power": ("fqdn", "power_address", "power_user", "power_passwd", "power_id", "power_type"),
    "exclude": ("fqdn", "arch", "family", "update", "excluded"),
    "install": ("fqdn", "arch", "family", "update", "ks_meta", "kernel_options", "kernel_options_post"),
    "keyvalue": ("fqdn", "key", "key_value", "deleted"),
    "system_pool": ("fqdn", "pool", "deleted"),
    "user_group": ("user", "group", "deleted"),
}
# What `export beaker-csv` writes: the kinds lablease has data for.
EXPORTED = ("system", "power", "keyvalue", "system_pool", "user_group")
# The columns a row of each kind cannot do without.
REQUIRED = {kind: ("user", "group") if kind == "user_group" else ("fqdn",) for kind in COLUMNS}
REQUIRED.update(keyvalue=("fqdn", "key", "key_value"), system_pool=("fqdn", "pool"))

STATUSES = ("Automated", "Manual", "Broken", "Removed")  # Beaker's system status = lablease's condition
# Beaker's power types that a lablease driver does the work of.
IPMI_TYPES = ("ipmilan", "ipmitool")
VIRSH = "virsh"
DEFAULT_LIBVIRT_URI = "qemu:///system"
_URI = re.compile(r"^(?P<driver>[A-Za-z0-9+]+)://(?:(?P<user>[^@/]*)@)?(?P<host>[^/]*)/system$")
_WHOLE = re.compile(r"^\s*\d{1,18}\s*$")
_MAC = re.compile(r"^[0-9a-fA-F]{2}([:-]?[0-9a-fA-F]{2}){5}$|^[0-9a-fA-F]{4}(\.[0-9a-fA-F]{4}){2}$")


class RowRefused(ValueError):
    """A row that cannot be imported, and why (its file and line are the caller's)."""


@dataclass(frozen=True)
class Row:
    file: str
    line: int  # where the row starts in its file, from 1 (the header is line 1)
    kind: str  # its csv_type
    values: dict

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass
class Plan:
    """What the rows ask of lablease: one system body per fqdn (with the row it is reported by), the
    memberships, the rows refused and the notes on what is not imported."""

    systems: dict[str, tuple[Row, dict]] = field(default_factory=dict)
    pools: list[tuple[Row, str, str, bool]] = field(default_factory=list)  # (row, pool, fqdn, deleted)
    groups: list[tuple[Row, str, str, bool]] = field(default_factory=list)  # (row, group, user, deleted)
    refused: list[tuple[Row, str]] = field(default_factory=list)
    notes: list[tuple[Row, str]] = field(default_factory=list)


def true(text) -> bool:
    """Beaker's smart_bool, as its deleted= and excluded= columns are read."""
    return str(text or "").strip().lower() == "true"


def fqdns_named(rows: list[Row]) -> set[str]:
    """The systems the rows name, lower case (what the service must look up)."""
    return {str(row.values.get("fqdn") or "").strip().lower() for row in rows if "fqdn" in row.values} - {""}


def plan(rows: list[Row], current: dict[str, dict]) -> Plan:
    """The changes `rows` ask for. `current`: each named system lablease has now, by fqdn, as
    {"attributes": ..., "netboot": ...} (key/value rows add to and remove from its attributes)."""
    result = Plan()
    # system rows first, whichever file they are in: the other rows of a system add to it (Beaker would make
    # a system for them; lablease needs its arch)
    for row in sorted(rows, key=lambda row: row.kind not in ("system", "system_id")):
        try:
            _ROW_READERS[row.kind](row, result, current)
        except RowRefused as error:
            result.refused.append((row, str(error)))
    return result


def _fqdn(row: Row, result: Plan, current: dict, new: bool = False) -> str:
    fqdn = str(row.values.get("fqdn") or "").strip().lower()
    if not fqdn:
        raise RowRefused("fqdn: must not be empty")
    if not new and fqdn not in current and fqdn not in result.systems:
        raise RowRefused(f"no system named {fqdn} in lablease or in this import's system rows (a system needs its "
                         "system row, with its arch, before its other rows)")
    return fqdn


def _body(row: Row, result: Plan, fqdn: str) -> dict:
    """The system's body so far (the first row that named it reports its refusal)."""
    if fqdn not in result.systems:
        result.systems[fqdn] = (row, {"fqdn": fqdn})
    return result.systems[fqdn][1]


def _text(value) -> str | None:
    text = str(value or "").strip()
    return text or None


def _system(row: Row, result: Plan, current: dict) -> None:
    values = row.values
    fqdn = _fqdn(row, result, current, new=True)
    changes: dict = {}
    inventory: dict = {}
    for column in ("lender", "location", "model", "serial", "vendor"):
        if column in values:
            inventory[column] = _text(values[column])
    if "type" in values:
        if values["type"] not in ("Machine", "Prototype", "Laptop", "Resource"):
            raise RowRefused(f"type: {values['type']!r} is not one of Machine, Prototype, Laptop, Resource")
        inventory["system_type"] = values["type"]
    if "memory" in values:
        memory = values["memory"].strip()
        if memory and not _WHOLE.match(memory):
            raise RowRefused(f"memory: {memory!r} is not a whole number of MiB")
        changes["memory_mb"] = int(memory) if memory and int(memory) > 0 else None
    if _text(values.get("arch")):
        arches = [arch.strip() for arch in values["arch"].split(",") if arch.strip()]
        changes["arch"] = arches[0]
        if len(arches) > 1:
            result.notes.append((row, f"{fqdn} has several arches in Beaker ({', '.join(arches)}): lablease keeps "
                                      f"one per system, the first ({arches[0]})"))
    if "lab_controller" in values:
        changes["lab"] = _text(values["lab_controller"])
    if "owner" in values:
        changes["owner"] = _text(values["owner"])
    if _text(values.get("status")):
        if values["status"].strip() not in STATUSES:
            raise RowRefused(f"status: {values['status']!r} is not one of {', '.join(STATUSES)}")
        changes["condition"] = values["status"].strip().lower()
    if "mac_address" in values:
        netboot = _netboot(values["mac_address"], (current.get(fqdn) or {}).get("netboot") or {})
        if netboot is not None:
            changes["netboot"] = netboot
    body = _body(row, result, fqdn)
    body.update(changes)
    if inventory:
        body["inventory"] = {**body.get("inventory", {}), **inventory}
    if _text(values.get("cc")):
        result.notes.append((row, f"{fqdn}'s cc ({values['cc']}): lablease keeps no mail list per system"))
    if _text(values.get("id")):
        result.notes.append((row, f"id={values['id']} (Beaker's database id): lablease matches systems by fqdn, "
                                  "so a rename is not imported"))
    if "secret" in values:
        result.notes.append((row, "secret: lablease shows every system to its users; access rules decide who may "
                                  "use it"))


def _netboot(mac: str, netboot: dict) -> dict | None:
    """The system's netboot settings with this MAC ("" takes it away); None when they do not change."""
    mac = (mac or "").strip()
    if mac and not _MAC.match(mac):
        raise RowRefused(f"mac_address: {mac!r} is not a MAC address")
    wanted = {**netboot, "mac": mac} if mac else {key: value for key, value in netboot.items() if key != "mac"}
    return None if wanted == netboot else wanted


def _power(row: Row, result: Plan, current: dict) -> None:
    values = row.values
    fqdn = _fqdn(row, result, current)
    kind = _text(values.get("power_type"))
    if kind is None:
        raise RowRefused("power_type: must not be empty")
    if kind in IPMI_TYPES:
        settings = {"driver": "ipmitool", "address": _text(values.get("power_address")) or "",
                    "user": _text(values.get("power_user")) or "", "password": values.get("power_passwd") or ""}
        if _text(values.get("power_id")):
            result.notes.append((row, f"{fqdn}'s power_id ({values['power_id']}, extra options to fence_ipmilan):"
                                      " lablease's ipmitool driver takes none (its settings interface and port)"))
    elif kind == VIRSH:
        settings = {"driver": "libvirt", "address": _text(values.get("power_id")) or fqdn,
                    "uri": _libvirt_uri(values.get("power_address"), values.get("power_user"))}
    else:
        result.notes.append((row, f"{fqdn}'s power type {kind}: lablease has no such driver, its power is not "
                                  "imported (give it one: PATCH /api/v1/systems/FQDN with power)"))
        return
    _body(row, result, fqdn)["power"] = settings


def _libvirt_uri(address, user) -> str:
    """As Beaker's virsh power script builds it: [driver:]host, and the user, to driver://user@host/system."""
    address, user = (address or "").strip(), (user or "").strip()
    driver = "qemu"
    if ":" in address:
        driver, _, address = address.partition(":")
        address = address.strip("/")
    if user and not address:
        address = "localhost"
    return f"{driver}://{user + '@' if user else ''}{address}/system"


def _keyvalue(row: Row, result: Plan, current: dict) -> None:
    values = row.values
    fqdn = _fqdn(row, result, current)
    key, value = _text(values.get("key")), _text(values.get("key_value"))
    if key is None:
        raise RowRefused("key: must not be blank")
    if value is None:
        raise RowRefused("key_value: must not be blank")
    body = _body(row, result, fqdn)
    attributes = body.get("attributes")
    if attributes is None:
        attributes = {name: list(kept) for name, kept in ((current.get(fqdn) or {}).get("attributes") or {}).items()}
    kept = attributes.get(key, [])
    if true(values.get("deleted")):
        kept = [each for each in kept if each != value]
    elif value not in kept:
        kept = kept + [value]
    if kept:
        attributes[key] = kept
    else:
        attributes.pop(key, None)
    body["attributes"] = attributes


def _membership(row: Row, result: Plan, current: dict) -> None:
    values = row.values
    if row.kind == "system_pool":
        fqdn = _fqdn(row, result, current)
        pool = _text(values.get("pool"))
        if pool is None:
            raise RowRefused("pool: must not be empty")
        result.pools.append((row, pool, fqdn, true(values.get("deleted"))))
        return
    user, group = _text(values.get("user")), _text(values.get("group"))
    if user is None:
        raise RowRefused("user: must not be empty")
    if group is None:
        raise RowRefused("group: must not be empty")
    result.groups.append((row, group, user, true(values.get("deleted"))))


def _not_kept(what: str):
    def note(row: Row, result: Plan, current: dict) -> None:
        _fqdn(row, result, current)
        if row.kind == "exclude" and not true(row.values.get("excluded")):
            return
        result.notes.append((row, what))
    return note


_ROW_READERS = {
    "system": _system, "system_id": _system, "power": _power, "keyvalue": _keyvalue,
    "system_pool": _membership, "user_group": _membership,
    "labinfo": _not_kept("lab info (cost, dimensions, weight, wattage, cooling): lablease keeps none"),
    "exclude": _not_kept("an excluded family: lablease excludes no families per system (its distroRequires and "
                         "hostRequires choose)"),
    "install": _not_kept("install options per system, arch and family: lablease keeps them per distro tree and "
                         "recipe, not per system"),
}


# --- export -------------------------------------------------------------------------------------

def system_row(system: dict) -> dict:
    """A system (its fqdn, arch, columns, inventory, netboot, owner name) as Beaker's system row."""
    inventory = system.get("inventory") or {}
    return {
        "fqdn": system["fqdn"], "lender": inventory.get("lender") or "", "location": inventory.get("location") or "",
        "mac_address": (system.get("netboot") or {}).get("mac") or "",
        "memory": "" if system.get("memory_mb") is None else str(system["memory_mb"]),
        "model": inventory.get("model") or "", "serial": inventory.get("serial") or "",
        "vendor": inventory.get("vendor") or "", "arch": system["arch"], "lab_controller": system.get("lab") or "",
        "owner": system.get("owner") or "", "status": system["condition"].capitalize(),
        "type": inventory.get("system_type") or "Machine", "cc": "",
    }


def power_row(fqdn: str, power: dict) -> dict | None:
    """The system's power settings as Beaker's power row; None when no Beaker power type does its driver's work."""
    driver = (power or {}).get("driver")
    if driver == "ipmitool":
        return {"fqdn": fqdn, "power_address": power.get("address") or "", "power_user": power.get("user") or "",
                "power_passwd": power.get("password") or "", "power_id": "", "power_type": "ipmilan"}
    if driver == "libvirt":
        match = _URI.match(power.get("uri") or DEFAULT_LIBVIRT_URI)
        if match is None:
            return None
        host = match["host"] if match["host"] != "localhost" or not match["user"] else ""
        address = host if match["driver"] == "qemu" else f"{match['driver']}:{host}"
        return {"fqdn": fqdn, "power_address": address, "power_user": match["user"] or "", "power_passwd": "",
                "power_id": power.get("address") or "", "power_type": VIRSH}
    return None


def keyvalue_rows(fqdn: str, attributes: dict) -> list[dict]:
    return [{"fqdn": fqdn, "key": key, "key_value": value, "deleted": "False"}
            for key in sorted(attributes or {}) for value in attributes[key]]
