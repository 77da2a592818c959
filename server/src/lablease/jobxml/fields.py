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

HOST_FIELD_OPS = {
    "hostname": TEXT_OPS,
    "arch": TEXT_OPS,
    "memory": NUMERIC_OPS,  # MiB
    "cpu_count": NUMERIC_OPS,
    "lab": TEXT_OPS,
    "key_value": ALL_OPS,
    "pool": POOL_OPS,  # value "" with = means "in no pool", with != "in any pool"
}
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
NUMERIC_FIELDS = frozenset({"memory", "cpu_count"})
HOST_FIELDS = tuple(HOST_FIELD_OPS)
DISTRO_FIELDS = tuple(DISTRO_FIELD_OPS)
BRANCHES = ("and", "or", "not")

# XML element name -> field, per context. Wrappers switch context.
SYSTEM_ELEMENTS = {"name": "hostname", "arch": "arch", "memory": "memory", "lab_controller": "lab"}
CPU_ELEMENTS = {"processors": "cpu_count", "cores": "cpu_count"}
HOST_ELEMENTS = {
    "hostname": "hostname", "arch": "arch", "memory": "memory", "cpu_count": "cpu_count",
    "lab": "lab", "labcontroller": "lab", "key_value": "key_value", "pool": "pool",
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

# The element each field is written as (render); a field not named here is written as itself.
ELEMENT_FOR_FIELD = {field: field for field in HOST_FIELDS + DISTRO_FIELDS}
ELEMENT_FOR_FIELD.update(distro_lab="labcontroller", distro_method="method")

# What a job exported from Beaker carries about its run: dropped with a warning, so it resubmits.
EXPORTED_ATTRIBUTES = {
    "job": ("id", "owner", "user", "result", "status", "is_deleted"),
    "recipeSet": ("id", "result", "status", "response"),
    "recipe": ("id", "job_id", "recipe_set_id", "result", "status", "distro", "family", "variant", "arch",
               "system", "start_time", "finish_time", "duration"),
    "task": ("id", "result", "status", "avg_time", "duration", "start_time", "finish_time"),
}
EXPORTED_CHILDREN = {"recipe": ("logs", "roles", "installation"), "task": ("results", "logs", "roles", "rpm")}
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
