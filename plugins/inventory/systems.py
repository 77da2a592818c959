# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
name: systems
short_description: Lab systems of a lablease server as an inventory
version_added: 1.0.0
description:
  - Lists the systems of a lablease server as hosts - all that the token's user may see, the ones the user owns,
    or the ones the user holds a reservation on now - optionally only of some architecture, lab, pool or condition.
  - Each host gets C(lablease_*) variables (see below) and can be grouped with O(keyed_groups), O(groups) and O(compose).
  - Reads a YAML file whose name ends in C(lablease.yml) or C(lablease.yaml).
  - "Host variables: C(lablease_fqdn), C(lablease_arch), C(lablease_cpus), C(lablease_memory_mb), C(lablease_lab),
    C(lablease_owner), C(lablease_condition), C(lablease_usage), C(lablease_attributes) (key -> list of values),
    C(lablease_pools) (names; empty until the server reports pools), C(lablease_reservation) (C(id), C(user), C(start),
    C(end), C(purpose), or null), C(lablease_reserved_by), C(lablease_reservation_end) (null when free),
    C(lablease_reservation_purpose) (what the holder said it is for), C(lablease_lent_to) and C(lablease_loan_purpose)
    (null when not lent) and C(lablease_inventory)
    (vendor, model, system type, hypervisor, CPU, NUMA nodes, last inventoried; disks and devices are on each
    system's own page of the API, not in the listing), C(lablease_health) (C(unknown), C(good), C(bad) or
    C(checking)) and C(lablease_health_detail) (since when, the last check's result, when it last passed)."
  - Every host is also in the group C(health_<health>) - C(health_good), C(health_bad), C(health_checking) or
    C(health_unknown) - so a play can target only systems whose last health check passed.
  - An option the plugin does not know (a typo such as C(sytems)) fails the source, naming it and the option
    it most resembles, rather than being ignored.
  - With O(cache), the list is kept as the server gave it - including the C(lablease_reservation*) variables, which
    are then as of that moment. O(systems=reserved) is never cached, since its hosts are what changes (a cached list
    would still show systems you have returned).
author:
  - lablease developers (@lablease)
extends_documentation_fragment:
  - constructed
  - inventory_cache
  - lablease.lab.api.plugin
options:
  plugin:
    description: Marks the file as this plugin's.
    type: str
    required: true
    choices: [lablease.lab.systems]
  systems:
    description:
      - V(all) - every system the user may see; V(mine) - the systems the user owns;
        V(reserved) - the systems the user holds a reservation on now.
      - V(reserved) is read from the server every time, even with O(cache) on.
    type: str
    choices: [all, mine, reserved]
    default: all
  arch:
    description: Only systems of this architecture.
    type: str
  lab:
    description: Only systems in this lab.
    type: str
  pool:
    description: Only systems in this pool (an unknown pool is an error).
    type: str
  condition:
    description: Only systems in this condition.
    type: str
    choices: [automated, manual, broken, removed]
  include_removed:
    description: Also list removed systems (when O(condition) is not set).
    type: bool
    default: false
"""

EXAMPLES = r"""
# inventory/lab.lablease.yml -- the systems I hold now, grouped by architecture:
#   ansible-inventory -i inventory/lab.lablease.yml --graph
plugin: lablease.lab.systems
url: http://127.0.0.1:8042
# token: from LABLEASE_TOKEN
systems: reserved
keyed_groups:
  - key: lablease_arch
    prefix: arch
  - key: lablease_lab | default('nolab', true)
    prefix: lab
groups:
  gpu: "'gpu' in lablease_attributes"
compose:
  ansible_host: lablease_fqdn
  lease_ends: lablease_reservation_end

# Every aarch64 system of lab-a, cached for ten minutes:
# plugin: lablease.lab.systems
# arch: aarch64
# lab: lab-a
# cache: true
# cache_plugin: ansible.builtin.jsonfile
# cache_connection: ~/.cache/lablease-inventory
# cache_timeout: 600
"""

import difflib

from ansible.errors import AnsibleError, AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin, Cacheable, Constructable
from ansible_collections.lablease.lab.plugins.module_utils.client import Client, LableaseError


def host_vars(system):
    """The lablease_* variables of one system, as the server describes it."""
    reservation = system.get("reservation")
    loan = system.get("loan")
    return {
        "lablease_fqdn": system.get("fqdn"),
        "lablease_arch": system.get("arch"),
        "lablease_cpus": system.get("cpus"),
        "lablease_memory_mb": system.get("memory_mb"),
        "lablease_lab": system.get("lab"),
        "lablease_owner": system.get("owner"),
        "lablease_condition": system.get("condition"),
        "lablease_usage": system.get("usage"),
        "lablease_attributes": system.get("attributes") or {},
        "lablease_pools": system.get("pools") or [],
        "lablease_reservation": reservation,
        "lablease_reserved_by": reservation.get("user") if reservation else None,
        "lablease_reservation_end": reservation.get("end") if reservation else None,
        "lablease_reservation_purpose": reservation.get("purpose") if reservation else None,
        "lablease_lent_to": loan.get("recipient") if loan else None,
        "lablease_loan_purpose": loan.get("purpose") if loan else None,
        "lablease_inventory": system.get("inventory") or {},
        "lablease_health": health_of(system),
        "lablease_health_detail": system.get("health") or {},
    }


def health_of(system):
    """unknown, good, bad or checking (a server that predates health checks: unknown)."""
    return (system.get("health") or {}).get("state") or "unknown"


class InventoryModule(BaseInventoryPlugin, Constructable, Cacheable):
    NAME = "lablease.lab.systems"

    def verify_file(self, path):
        return super(InventoryModule, self).verify_file(path) and path.endswith(("lablease.yml", "lablease.yaml"))

    def client(self):
        try:
            return Client(self.get_option("url"), self.get_option("token"),
                          validate_certs=self.get_option("validate_certs"), timeout=self.get_option("timeout"),
                          retries=self.get_option("retries"), user_agent="lablease.lab.systems")
        except LableaseError as error:
            raise AnsibleError("lablease.lab.systems: %s" % error.message)

    def query(self, client):
        query = {"arch": self.get_option("arch"), "lab": self.get_option("lab"), "pool": self.get_option("pool"),
                 "condition": self.get_option("condition")}
        which = self.get_option("systems")
        if which == "mine":
            query["owner"] = client.me()["name"]
        elif which == "reserved":
            query["reserved_by"] = "me"
        return query

    def fetch(self):
        client = self.client()
        try:
            systems = client.get_all("/systems", self.query(client))
        except LableaseError as error:
            raise AnsibleError("lablease.lab.systems: %s" % error.message)
        if not self.get_option("include_removed") and not self.get_option("condition"):
            systems = [s for s in systems if s.get("condition") != "removed"]
        return systems

    def refuse_unknown_options(self, config, path):
        """Ansible ignores keys an inventory plugin does not declare; a misspelt filter would list every system."""
        unknown = sorted(set(config) - set(self._options))
        if not unknown:
            return
        known = sorted(self._options)
        named = []
        for key in unknown:
            close = difflib.get_close_matches(key, known, n=1)
            named.append("'%s'%s" % (key, " (did you mean '%s'?)" % close[0] if close else ""))
        raise AnsibleParserError("%s: unknown option %s in %s; the options are %s"
                                 % (self.NAME, ", ".join(named), path, ", ".join(known)))

    def parse(self, inventory, loader, path, cache=True):
        super(InventoryModule, self).parse(inventory, loader, path, cache)
        config = self._read_config_data(path)
        self.refuse_unknown_options(config, path)
        # The systems held now are what a cache would get wrong: never cache them (DOCUMENTATION says so).
        cacheable = self.get_option("systems") != "reserved"
        if not cacheable and config.get("cache"):
            self.display.warning("%s: %s: systems: reserved is read from the server every time; cache is not used for "
                                 "it (a cached list would still show systems you have returned)" % (self.NAME, path))
        cache_key = self.get_cache_key(path)
        use_cache = cacheable and self.get_option("cache") and cache
        update_cache = cacheable and self.get_option("cache") and not cache
        systems = None
        if use_cache:
            try:
                systems = self._cache[cache_key]
            except KeyError:
                update_cache = True
        if systems is None:
            systems = self.fetch()
        if update_cache:
            self._cache[cache_key] = systems
        self.populate(systems)

    def populate(self, systems):
        strict = self.get_option("strict")
        for system in systems:
            name = self.inventory.add_host(system["fqdn"])
            variables = host_vars(system)
            for key, value in variables.items():
                self.inventory.set_variable(name, key, value)
            group = self.inventory.add_group("health_%s" % variables["lablease_health"])
            self.inventory.add_child(group, name)
            self._set_composite_vars(self.get_option("compose"), variables, name, strict=strict)
            self._add_host_to_composed_groups(self.get_option("groups"), variables, name, strict=strict)
            self._add_host_to_keyed_groups(self.get_option("keyed_groups"), variables, name, strict=strict)
