"""hostRequires over the inventory: each Beaker filter with its operators, as a table (scheduler/filters.py)."""
from datetime import date

import pytest

from lablease.scheduler.filters import Host, is_live, needs_hardware, possible, verdict

DELL = Host(
    1, "dell.lab.test", "x86_64", memory=65536, cpu_count=32, lab="brno", pools=frozenset({"big"}),
    vendor="Dell Inc.", model="PowerEdge R740", serial="ABC123", system_type="Machine", hypervisor=None,
    status="Automated", owner="ann", powertype="ipmitool", numa_nodes=2, added=date(2025, 6, 1),
    last_inventoried=date(2026, 1, 10), user="alice",
    cpu={"vendor": "GenuineIntel", "model_name": "Intel(R) Xeon(R) Gold 6130", "family": 6, "model": 85,
         "stepping": 4, "speed": 2100.0, "cores": 16, "sockets": 2, "hyper": True, "flags": ["vmx", "avx2", "sse4_2"]},
    disks=({"size": 480 * 10**9, "sector_size": 512, "phys_sector_size": 512, "model": "SSD 480"},
           {"size": 4 * 10**12, "sector_size": 512, "phys_sector_size": 4096, "model": "HDD 4T"}),
    devices=({"bus": "pci", "type": "NIC", "vendor_id": "8086", "device_id": "1572", "driver": "i40e",
              "description": "Ethernet Controller X710"},
             {"bus": "pci", "type": "VIDEO", "vendor_id": "102B", "device_id": "0536", "driver": "mgag200"}),
)
VM = Host(2, "vm.lab.test", "x86_64", memory=4096, cpu_count=2, system_type="Machine", hypervisor="KVM",
          status="Manual", loaned="bob", cpu={"vendor": "AuthenticAMD", "flags": ["svm"]},
          disks=({"size": 20 * 2**30, "sector_size": 512},), devices=({"bus": "virtio", "driver": "virtio_net"},))
BARE = Host(3, "proto.lab.test", "aarch64", system_type="Prototype", status="Broken")  # never inventoried


def leaf(field, op, value, **extra):
    return {"field": field, "op": op, "value": value, **extra}


def disk(tree):
    return {"disk": tree}


CASES = [
    # system fields: text with = != like; "" asks for unset
    (leaf("vendor", "=", "Dell Inc."), {1}),
    (leaf("vendor", "like", "dell%"), {1}),
    (leaf("vendor", "!=", "Dell Inc."), {2, 3}),
    (leaf("model", "like", "%R740"), {1}),
    (leaf("serial", "=", "ABC123"), {1}),
    (leaf("system_type", "=", "Prototype"), {3}),
    (leaf("system_type", "!=", "Machine"), {3}),
    (leaf("hypervisor", "=", ""), {1, 3}),  # bare metal
    (leaf("hypervisor", "!=", ""), {2}),
    (leaf("hypervisor", "=", "KVM"), {2}),
    (leaf("status", "=", "Automated"), {1}),
    (leaf("owner", "=", "ann"), {1}),
    (leaf("powertype", "=", "ipmitool"), {1}),
    (leaf("auto_prov", "=", True), {1}),
    (leaf("auto_prov", "=", False), {2, 3}),
    (leaf("location", "=", "rack 4"), set()),  # a field no system has: matches nothing
    # numbers
    (leaf("numa_nodes", ">=", 2), {1}),
    (leaf("numa_nodes", "<", 2), set()),
    (leaf("memory", ">", 8192), {1}),
    (leaf("cpu_count", "<=", 2), {2}),
    # days
    (leaf("last_inventoried", "=", ""), {2, 3}),  # never inventoried
    (leaf("last_inventoried", "!=", ""), {1}),
    (leaf("last_inventoried", "=", "2026-01-10"), {1}),
    (leaf("last_inventoried", ">", "2026-01-09"), {1}),
    (leaf("last_inventoried", ">", "2026-01-10"), set()),  # by day: the 10th is not after the 10th
    (leaf("last_inventoried", "<=", "2026-01-10"), {1}),
    (leaf("added", "<", "2025-07-01"), {1}),
    # the cpu
    (leaf("cpu_vendor", "=", "GenuineIntel"), {1}),
    (leaf("cpu_model_name", "like", "%Xeon%"), {1}),
    (leaf("cpu_family", "=", 6), {1}),
    (leaf("cpu_model", ">", 80), {1}),
    (leaf("cpu_stepping", "!=", 4), {2, 3}),
    (leaf("cpu_speed", ">=", 2000.5), {1}),
    (leaf("cpu_cores", ">=", 16), {1}),
    (leaf("cpu_sockets", "=", 2), {1}),
    (leaf("cpu_hyper", "=", True), {1}),
    (leaf("cpu_flag", "=", "vmx"), {1}),
    (leaf("cpu_flag", "=", "svm"), {2}),
    (leaf("cpu_flag", "!=", "vmx"), {2, 3}),  # no such flag
    (leaf("cpu_flag", "like", "sse%"), {1}),
    ({"or": [leaf("cpu_flag", "=", "vmx"), leaf("cpu_flag", "=", "svm")]}, {1, 2}),
    # devices: every given attribute on one device
    (leaf("device", "=", {"bus": "pci", "vendor_id": "8086"}), {1}),
    (leaf("device", "=", {"vendor_id": "102b", "device_id": "0536"}), {1}),  # ids ignore case
    (leaf("device", "=", {"vendor_id": "8086", "driver": "mgag200"}), set()),  # on two devices, not one
    (leaf("device", "!=", {"driver": "i40e"}), {2, 3}),
    (leaf("device", "like", {"description": "%x710%"}), {1}),
    # disks: one disk matches the whole subtree
    (disk(leaf("disk_size", ">=", 10**12)), {1}),
    (disk(leaf("disk_size", ">", 10 * 2**30)), {1, 2}),
    (disk({"and": [leaf("disk_size", ">", 10**12), leaf("disk_phys_sector_size", "=", 4096)]}), {1}),
    (disk({"and": [leaf("disk_size", "<", 10**12), leaf("disk_phys_sector_size", "=", 4096)]}), set()),
    (disk(leaf("disk_model", "like", "SSD%")), {1}),
    ({"not": disk(leaf("disk_size", ">=", 0))}, {3}),  # no disk at all
    # live: who holds the system now (DELL: alice) and who it is lent to (VM: bob); "" = nobody
    (leaf("user", "=", "alice"), {1}),
    (leaf("user", "=", ""), {2, 3}),
    (leaf("user", "!=", ""), {1}),
    (leaf("user", "!=", "alice"), {2, 3}),
    (leaf("user", "like", "AL%"), {1}),
    (leaf("loaned", "=", "bob"), {2}),
    (leaf("loaned", "=", ""), {1, 3}),
    (leaf("loaned", "!=", "bob"), {1, 3}),
    (leaf("loaned", "like", "b%"), {2}),
    # and / or / not around inventory
    ({"and": [leaf("hypervisor", "=", ""), {"not": leaf("system_type", "=", "Prototype")}]}, {1}),
]


@pytest.mark.parametrize("tree, expected", CASES, ids=[str(i) for i in range(len(CASES))])
def test_each_filter_picks_the_systems_beaker_would(tree, expected):
    assert {h.id for h in (DELL, VM, BARE) if verdict(tree, h)[0]} == expected


@pytest.mark.parametrize("tree, host, reason", [
    (leaf("cpu_flag", "=", "vmx"), VM, "cpu_flag = vmx"),
    (leaf("device", "=", {"bus": "pci", "driver": "i40e"}), VM, "device = bus=pci, driver=i40e"),
    (disk(leaf("disk_size", ">=", 10**12)), VM, "no disk with disk_size >= 1000000000000"),
    (leaf("hypervisor", "=", ""), VM, 'hypervisor = ""'),
])
def test_a_ruled_out_system_is_told_why(tree, host, reason):
    assert verdict(tree, host) == (False, reason)


def test_disks_and_devices_are_loaded_only_for_filters_that_look_at_them():
    assert not needs_hardware({"and": [leaf("vendor", "=", "x"), {"not": leaf("cpu_flag", "=", "vmx")}]})
    assert needs_hardware({"or": [leaf("arch", "=", "x"), {"not": leaf("device", "=", {"bus": "pci"})}]})
    assert needs_hardware({"and": [disk(leaf("disk_size", ">", 1))]})


@pytest.mark.parametrize("tree, expected", [
    (leaf("loaned", "=", "bob"), {1, 2, 3}),  # unknown: every system may be lent to bob one day
    ({"not": leaf("user", "=", "")}, {1, 2, 3}),  # not unknown is unknown, never "no system"
    ({"and": [leaf("loaned", "=", "bob"), leaf("hypervisor", "=", "KVM")]}, {2}),  # the rest still rules out
    ({"and": [leaf("user", "=", ""), {"not": leaf("hypervisor", "=", "KVM")}]}, {1, 3}),
    ({"or": [leaf("loaned", "=", "bob"), leaf("vendor", "=", "Dell Inc.")]}, {1, 2, 3}),
    ({"not": {"or": [leaf("user", "=", "x"), leaf("vendor", "=", "Dell Inc.")]}}, {2, 3}),  # true or ? = true
])
def test_candidates_treat_live_filters_as_unknown(tree, expected):
    """The candidate list is worked out once: a live leaf must not rule a system in or out there."""
    assert {h.id for h in (DELL, VM, BARE) if possible(tree, h)} == expected
    assert is_live(tree)


def test_a_tree_without_live_leaves_is_judged_alike_by_possible_and_verdict():
    for tree, expected in CASES:
        if not is_live(tree):
            assert {h.id for h in (DELL, VM, BARE) if possible(tree, h)} == expected
