# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible.inventory.data import InventoryData
from ansible.template import Templar
from ansible_collections.lablease.lab.plugins.inventory.systems import InventoryModule, host_vars

try:  # ansible-core >= 2.19 only evaluates trusted expressions (those read from inventory files are)
    from ansible.template import trust_as_template
except ImportError:  # older ansible-core
    def trust_as_template(value):
        return value


@pytest.fixture
def plugin():
    module = InventoryModule()
    module.inventory = InventoryData()
    module.templar = Templar(loader=None)
    options = {"strict": True, "compose": {"lease_ends": trust_as_template("lablease_reservation_end")},
               "groups": {"gpu": trust_as_template("'gpu' in lablease_attributes")},
               "keyed_groups": [{"key": trust_as_template("lablease_arch"), "prefix": "arch", "separator": "_"}],
               "leading_separator": True, "use_extra_vars": False}
    module.get_option = options.get
    return module


SYSTEMS = [
    {"fqdn": "s1.lab.test", "arch": "x86_64", "attributes": {"gpu": ["a100"]}, "condition": "manual",
     "inventory": {"vendor": "Dell Inc.", "hypervisor": None, "cpu": {"flags": ["vmx"]}},
     "reservation": {"id": 4, "user": "alice", "start": "2026-11-22T10:00:00Z", "end": "2026-11-22T14:00:00Z",
                     "purpose": "kernel bisect"},
     "loan": {"recipient": "alice", "end": None, "purpose": "driver work"}},
    {"fqdn": "s2.lab.test", "arch": "aarch64", "attributes": {}, "condition": "manual", "reservation": None,
     "health": {"state": "good", "since": "2026-11-22T09:00:00Z", "passed_at": "2026-11-22T09:00:00Z"}},
]


def test_host_vars():
    variables = host_vars(SYSTEMS[0])
    assert variables["lablease_reserved_by"] == "alice"
    assert variables["lablease_reservation_end"] == "2026-11-22T14:00:00Z"
    assert variables["lablease_pools"] == []
    assert variables["lablease_inventory"]["cpu"]["flags"] == ["vmx"]
    assert host_vars(SYSTEMS[1])["lablease_reservation_end"] is None
    assert host_vars(SYSTEMS[1])["lablease_inventory"] == {}


def test_the_holders_purpose_is_a_host_var():
    variables = host_vars(SYSTEMS[0])
    assert variables["lablease_reservation_purpose"] == "kernel bisect"
    assert (variables["lablease_lent_to"], variables["lablease_loan_purpose"]) == ("alice", "driver work")
    free = host_vars(SYSTEMS[1])
    assert (free["lablease_reservation_purpose"], free["lablease_lent_to"], free["lablease_loan_purpose"]) == \
        (None, None, None)


def test_populate_groups_and_compose(plugin):
    plugin.populate(SYSTEMS)
    inventory = plugin.inventory
    assert sorted(inventory.hosts) == ["s1.lab.test", "s2.lab.test"]
    assert [h.name for h in inventory.groups["gpu"].get_hosts()] == ["s1.lab.test"]
    assert [h.name for h in inventory.groups["arch_aarch64"].get_hosts()] == ["s2.lab.test"]
    assert inventory.get_host("s1.lab.test").vars["lease_ends"] == "2026-11-22T14:00:00Z"
    # grouped by health: a play can target only systems whose last check passed
    assert [h.name for h in inventory.groups["health_good"].get_hosts()] == ["s2.lab.test"]
    assert [h.name for h in inventory.groups["health_unknown"].get_hosts()] == ["s1.lab.test"]
    assert inventory.get_host("s2.lab.test").vars["lablease_health_detail"]["passed_at"] == "2026-11-22T09:00:00Z"


def test_verify_file(plugin, tmp_path):
    good = tmp_path / "lab.lablease.yml"
    good.write_text("plugin: lablease.lab.systems\n")
    bad = tmp_path / "lab.yml"
    bad.write_text("plugin: lablease.lab.systems\n")
    assert plugin.verify_file(str(good))
    assert not plugin.verify_file(str(bad))
