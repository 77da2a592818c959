"""A system's inventory, as Beaker keeps it: what it is (vendor, model, type, hypervisor) and what it has
(CPU, disks, devices, NUMA nodes). The shape is a JSON Schema (the API's, and the check of an import);
hostRequires filters read it (scheduler/filters.py, docs/jobs.md "hostRequires")."""
from __future__ import annotations

from .limits import MAX_INT

SYSTEM_TYPES = ("Machine", "Prototype", "Laptop", "Resource")
TEXT_FIELDS = ("vendor", "model", "serial", "location", "lender")
DEVICE_KEYS = ("type", "bus", "driver", "vendor_id", "device_id", "subsys_vendor_id", "subsys_device_id",
               "description")
# The columns of a system that hold the inventory, in the order shown.
COLUMNS = TEXT_FIELDS + ("system_type", "hypervisor", "numa_nodes", "last_inventoried", "cpu", "disks", "devices")

_TEXT = {"type": ["string", "null"], "maxLength": 255, "pattern": r"^[^\x00-\x1f\x7f]*$"}
_COUNT = {"type": ["integer", "null"], "minimum": 0, "maximum": MAX_INT}
_BYTES = {**_COUNT, "maximum": 2**63 - 1, "description": "bytes"}  # kept in JSON, not an integer column

CPU_SCHEMA = {
    "type": ["object", "null"], "additionalProperties": False,
    "properties": {
        "vendor": _TEXT, "model_name": _TEXT, "family": _COUNT, "model": _COUNT, "stepping": _COUNT,
        "speed": {"type": ["number", "null"], "minimum": 0, "maximum": MAX_INT, "description": "MHz"},
        "processors": {**_COUNT, "minimum": 1, "description": "logical processors: the system's cpus"},
        "cores": _COUNT, "sockets": _COUNT, "hyper": {"type": ["boolean", "null"], "description": "hyper-threading"},
        "flags": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 64,
                                             "pattern": r"^\S+$"}, "uniqueItems": True},
    },
}
DISK_SCHEMA = {
    "type": "object", "additionalProperties": False,
    "properties": {"size": _BYTES, "sector_size": _BYTES, "phys_sector_size": _BYTES, "model": _TEXT},
}
DEVICE_SCHEMA = {"type": "object", "additionalProperties": False, "properties": {key: _TEXT for key in DEVICE_KEYS}}
INVENTORY_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "description": "Beaker's inventory fields; a PATCH replaces the fields it gives (cpu, disks, devices whole)",
    "properties": {
        **{name: _TEXT for name in TEXT_FIELDS},
        "system_type": {"enum": list(SYSTEM_TYPES)},
        "hypervisor": {**_TEXT, "maxLength": 32, "description": "KVM, Xen, HyperV...; null: bare metal"},
        "numa_nodes": _COUNT,
        "last_inventoried": {"type": ["string", "null"], "format": "date-time"},
        "cpu": CPU_SCHEMA,
        "disks": {"type": ["array", "null"], "items": DISK_SCHEMA},
        "devices": {"type": ["array", "null"], "items": DEVICE_SCHEMA},
    },
}
