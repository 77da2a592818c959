"""The vocabulary of job filters, shared by the XML and JSON forms.

A filter tree is `{"and": [...]}`, `{"or": [...]}`, `{"not": F}` or a leaf
`{"field", "op", "value"}` (plus `"key"` for key_value). This module names
the fields, which operators each accepts, and which XML element means which
field in which context (`<arch>` is the system's arch in hostRequires and the
distro tree's arch in distroRequires).
"""
from __future__ import annotations

TEXT_OPS = ("=", "!=", "like")
NUMERIC_OPS = ("=", "!=", "<", "<=", ">", ">=")
POOL_OPS = ("=", "!=")
ALL_OPS = ("=", "!=", "<", "<=", ">", ">=", "like")
OP_ALIASES = {"==": "="}  # Beaker writes ==

# Each field's value kind: text, number (whole), real, date ("YYYY-MM-DD" or "" for never),
# boolean, bytes (whole, with optional units), device (an object of device attributes),
# key_value (text or number, with a key).
HOST_FIELD_KINDS = {
    "hostname": ("text", TEXT_OPS),
    "arch": ("text", TEXT_OPS),
    "memory": ("number", NUMERIC_OPS),  # MiB
    "cpu_count": ("number", NUMERIC_OPS),  # the system's cpus (Beaker's <cpu><processors>)
    "lab": ("text", TEXT_OPS),
    "key_value": ("key_value", ALL_OPS),
    "pool": ("text", POOL_OPS),  # value "" with = means "in no pool", with != "in any pool"
    # the inventory (docs/jobs.md, "hostRequires")
    "vendor": ("text", TEXT_OPS),
    "model": ("text", TEXT_OPS),
    "serial": ("text", TEXT_OPS),
    "location": ("text", TEXT_OPS),
    "lender": ("text", TEXT_OPS),
    "system_type": ("text", TEXT_OPS),
    "hypervisor": ("text", TEXT_OPS),  # "" = bare metal
    "status": ("text", TEXT_OPS),  # the condition, as Beaker spells it (Automated, Manual, Broken, Removed)
    "owner": ("text", TEXT_OPS),
    "powertype": ("text", TEXT_OPS),  # the power driver
    "auto_prov": ("boolean", POOL_OPS),  # has a power driver
    "numa_nodes": ("number", NUMERIC_OPS),
    "added": ("date", NUMERIC_OPS),
    "last_inventoried": ("date", NUMERIC_OPS),  # "" = never inventoried
    "cpu_vendor": ("text", TEXT_OPS),
    "cpu_model_name": ("text", TEXT_OPS),
    "cpu_family": ("number", NUMERIC_OPS),
    "cpu_model": ("number", NUMERIC_OPS),
    "cpu_stepping": ("number", NUMERIC_OPS),
    "cpu_speed": ("real", NUMERIC_OPS),  # MHz
    "cpu_cores": ("number", NUMERIC_OPS),
    "cpu_sockets": ("number", NUMERIC_OPS),
    "cpu_hyper": ("boolean", POOL_OPS),
    "cpu_flag": ("text", TEXT_OPS),  # = : has the flag; != : has no such flag
    "device": ("device", TEXT_OPS),  # = : has a matching device; != : has none
    # live: they change while a recipe waits (scheduler/filters.py LIVE_FIELDS); "" = nobody
    "user": ("text", TEXT_OPS),  # who holds the system now (the reservation in force)
    "loaned": ("text", TEXT_OPS),  # who the system is lent to (the active loan)
}
HOST_FIELD_OPS = {field: ops for field, (_, ops) in HOST_FIELD_KINDS.items()}
# Inside <disk>: a system matches when one of its disks matches the whole subtree.
DISK_FIELD_KINDS = {
    "disk_size": ("bytes", NUMERIC_OPS),
    "disk_sector_size": ("bytes", NUMERIC_OPS),
    "disk_phys_sector_size": ("bytes", NUMERIC_OPS),
    "disk_model": ("text", TEXT_OPS),
}
DISK_FIELD_OPS = {field: ops for field, (_, ops) in DISK_FIELD_KINDS.items()}
DISTRO_FIELD_OPS = {
    "distro_name": TEXT_OPS,
    "distro_family": TEXT_OPS,
    "distro_arch": TEXT_OPS,
    "distro_variant": TEXT_OPS,
    "distro_tag": TEXT_OPS,
    "distro_lab": TEXT_OPS,  # a tree available in that lab (Beaker's labcontroller)
    # Kept, not acted on: every tree is installed over its URL, and none is a "virt" tree. They match
    # every tree (so `not` of one matches none) and the job's answer warns.
    "distro_method": TEXT_OPS,
    "distro_virt": TEXT_OPS,
}
UNACTED_DISTRO_FIELDS = ("distro_method", "distro_virt")
VALUE_KINDS = {field: kind for field, (kind, _) in {**HOST_FIELD_KINDS, **DISK_FIELD_KINDS}.items()}
NUMERIC_FIELDS = frozenset(f for f, kind in VALUE_KINDS.items() if kind in ("number", "bytes"))
HOST_FIELDS = tuple(HOST_FIELD_OPS)
DISK_FIELDS = tuple(DISK_FIELD_OPS)
DISTRO_FIELDS = tuple(DISTRO_FIELD_OPS)
BRANCHES = ("and", "or", "not")
DISK = "disk"  # the node {"disk": tree} (a host filter only)

DEVICE_KEYS = ("type", "bus", "driver", "vendor_id", "device_id", "subsys_vendor_id", "subsys_device_id",
               "description")
# Beaker's units of a disk's sizes (bytes_units); decimal and binary multiples.
BYTE_UNITS = {"bytes": 1, "B": 1, "kB": 10**3, "KB": 10**3, "KiB": 2**10, "MB": 10**6, "MiB": 2**20,
              "GB": 10**9, "GiB": 2**30, "TB": 10**12, "TiB": 2**40}

# XML element name -> field, per context. Wrappers switch context.
SYSTEM_ELEMENTS = {
    "name": "hostname", "arch": "arch", "memory": "memory", "lab_controller": "lab", "vendor": "vendor",
    "model": "model", "serial": "serial", "location": "location", "lender": "lender", "type": "system_type",
    "hypervisor": "hypervisor", "status": "status", "owner": "owner", "powertype": "powertype",
    "numanodes": "numa_nodes", "added": "added", "last_inventoried": "last_inventoried", "user": "user",
    "loaned": "loaned",
}
CPU_ELEMENTS = {
    "processors": "cpu_count", "cores": "cpu_cores", "sockets": "cpu_sockets", "vendor": "cpu_vendor",
    "model_name": "cpu_model_name", "family": "cpu_family", "model": "cpu_model", "stepping": "cpu_stepping",
    "speed": "cpu_speed", "hyper": "cpu_hyper", "flag": "cpu_flag",
}
DISK_ELEMENTS = {"size": "disk_size", "sector_size": "disk_sector_size",
                 "phys_sector_size": "disk_phys_sector_size", "model": "disk_model"}
HOST_ELEMENTS = {
    "hostname": "hostname", "host": "hostname", "arch": "arch", "memory": "memory", "cpu_count": "cpu_count",
    "lab": "lab", "labcontroller": "lab", "hostlabcontroller": "lab", "key_value": "key_value", "pool": "pool",
    "group": "pool", "system_type": "system_type", "hypervisor": "hypervisor", "numa_node_count": "numa_nodes",
    "auto_prov": "auto_prov", "last_inventoried": "last_inventoried", "device": "device",
}
HOST_WRAPPERS = {"system": SYSTEM_ELEMENTS, "cpu": CPU_ELEMENTS}
DISTRO_ELEMENTS = {
    "distro_name": "distro_name", "name": "distro_name",
    "distro_family": "distro_family", "family": "distro_family",
    "distro_arch": "distro_arch", "arch": "distro_arch",
    "distro_variant": "distro_variant", "variant": "distro_variant",
    "distro_tag": "distro_tag", "tag": "distro_tag",
    "labcontroller": "distro_lab", "distrolabcontroller": "distro_lab",
    "method": "distro_method", "distro_method": "distro_method", "distro_virt": "distro_virt",
}
# <distro> inside <distroRequires>: its children are and-ed, like <system> in hostRequires.
DISTRO_WRAPPERS = {"distro": DISTRO_ELEMENTS}

# The element each field is written as (render): (wrapper or None, element).
ELEMENT_FOR_FIELD = {
    **{field: (None, field) for field in HOST_FIELDS + DISTRO_FIELDS},
    **{field: ("system", element) for element, field in SYSTEM_ELEMENTS.items()
       if field not in ("hostname", "arch", "memory", "lab")},
    **{field: ("cpu", element) for element, field in CPU_ELEMENTS.items() if field != "cpu_count"},
    **{field: (None, element) for element, field in DISK_ELEMENTS.items()},
    "numa_nodes": ("system", "numanodes"),
    "last_inventoried": (None, "last_inventoried"),
    "distro_lab": (None, "labcontroller"),
    "distro_method": (None, "method"),
}

# What a job exported from Beaker carries about its run: dropped with a warning, so it resubmits.
_RECIPE_RUN = ("id", "job_id", "recipe_set_id", "result", "status", "distro", "family", "variant", "arch", "system",
               "start_time", "finish_time", "duration", "kickstart_url")
EXPORTED_ATTRIBUTES = {
    "job": ("id", "owner", "user", "result", "status", "is_deleted"),
    "recipeSet": ("id", "result", "status", "response"),
    "recipe": _RECIPE_RUN,
    # a guest's run also says where its host installed it from and the MAC it gave it
    "guestrecipe": _RECIPE_RUN + ("mac_address", "location", "ftp_location", "http_location", "nfs_location"),
    "task": ("id", "result", "status", "avg_time", "duration", "start_time", "finish_time"),
}
EXPORTED_CHILDREN = {"recipe": ("logs", "roles", "installation"), "guestrecipe": ("logs", "roles", "installation"),
                     "task": ("results", "logs", "roles", "rpm")}
PARTITION_TYPES = ("part", "lvm")
WATCHDOG_PANIC = ("ignore", "None")

PRIORITIES = ("Low", "Medium", "Normal", "High", "Urgent")
WHEN = {  # Beaker's reservesys when= -> (onabort, onfail, onwarn, onpass)
    "always": (True, True, True, True),
    "onwarn": (True, True, True, False),
    "onfail": (True, True, False, False),
    "onabort": (True, False, False, False),
}
RESERVE_FLAGS = ("onabort", "onfail", "onwarn", "onpass")
DEFAULT_RESERVE_SECONDS = 86400
DEFAULT_ROLE = "STANDALONE"
