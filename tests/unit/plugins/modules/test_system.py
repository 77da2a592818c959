# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.lablease.lab.plugins.modules import system, system_info


def test_add_then_idempotent(api, run):
    args = {"fqdn": "s3.lab.test", "arch": "x86_64", "cpus": 4, "attributes": {"gpu": "a100", "numa": 2}}
    result, failed = run(system.main, args)
    assert not failed and result["changed"]
    assert api.writes[0][:2] == ("POST", "/systems")
    assert api.writes[0][2]["attributes"] == {"gpu": ["a100"], "numa": ["2"]}
    api.calls[:] = []
    result, failed = run(system.main, args)
    assert not result["changed"] and api.writes == []


def test_change_only_what_differs(api, run):
    api.add_system("s3.lab.test", cpus=4, power={"driver": "ipmitool", "address": "bmc"})
    result, failed = run(system.main, {"fqdn": "s3.lab.test", "cpus": 8, "power": {"address": "bmc"}}, diff=True)
    assert result["changed"]
    assert api.writes == [("PATCH", "/systems/s3.lab.test", {"cpus": 8})]
    assert result["diff"]["before"]["cpus"] == 4 and result["diff"]["after"]["cpus"] == 8


INVENTORY = {"vendor": "Dell Inc.", "hypervisor": None, "cpu": {"vendor": "GenuineIntel", "cores": 16, "flags": ["vmx"]},
             "devices": [{"bus": "pci", "vendor_id": "8086"}]}


def test_inventory_keys_given_are_compared_and_sent(api, run):
    api.add_system("s3.lab.test", cpus=32, inventory={
        "vendor": "Dell Inc.", "model": "R740", "hypervisor": None, "system_type": "Machine",
        "cpu": {"vendor": "GenuineIntel", "cores": 16, "flags": ["vmx"], "processors": 32},  # as the server shows it
        "devices": [{"bus": "pci", "vendor_id": "8086"}]})
    result, failed = run(system.main, {"fqdn": "s3.lab.test", "inventory": INVENTORY})
    assert not failed and not result["changed"] and api.writes == []  # processors is cpus, not compared unless given
    changed = dict(INVENTORY, hypervisor="KVM", cpu={"vendor": "GenuineIntel", "cores": 16, "flags": ["vmx", "svm"]})
    result, failed = run(system.main, {"fqdn": "s3.lab.test", "inventory": changed}, check=True, diff=True)
    assert result["changed"] and api.writes == []
    assert result["diff"]["after"]["inventory"]["hypervisor"] == "KVM"
    assert result["diff"]["after"]["inventory"]["model"] == "R740"  # kept: not given
    result, failed = run(system.main, {"fqdn": "s3.lab.test", "inventory": changed})
    assert api.writes == [("PATCH", "/systems/s3.lab.test",
                           {"inventory": {"hypervisor": "KVM", "cpu": changed["cpu"]}})]
    assert result["system"]["inventory"]["model"] == "R740"


def test_password_is_sent_only_on_create(api, run):
    api.add_system("s3.lab.test", power={"driver": "ipmitool"})
    result, failed = run(system.main, {"fqdn": "s3.lab.test", "power_password": "pw"})
    assert not result["changed"]
    result, failed = run(system.main, {"fqdn": "s3.lab.test", "power_password": "pw", "update_password": "always"})
    assert result["changed"]
    assert api.writes[-1][2]["power"] == {"driver": "ipmitool", "password": "pw"}


def test_check_mode_and_absent(api, run):
    api.add_system("s3.lab.test")
    result, failed = run(system.main, {"fqdn": "s3.lab.test", "state": "absent"}, check=True)
    assert result["changed"] and api.writes == []
    result, failed = run(system.main, {"fqdn": "s3.lab.test", "state": "absent"})
    assert result["changed"] and result["system"]["condition"] == "removed"
    result, failed = run(system.main, {"fqdn": "s3.lab.test", "state": "absent"})
    assert not result["changed"]


def test_new_system_needs_arch(api, run):
    result, failed = run(system.main, {"fqdn": "new.lab.test"})
    assert failed and "arch is required" in result["msg"]


def test_system_info_filters_and_unknown(api, run):
    api.add_system("a.lab.test", arch="aarch64")
    api.add_system("b.lab.test")
    result, failed = run(system_info.main, {"arch": "aarch64"})
    assert [s["fqdn"] for s in result["systems"]] == ["a.lab.test"]
    result, failed = run(system_info.main, {"fqdn": "zz.lab.test"})
    assert failed and "no system named zz.lab.test" in result["msg"]
    result, failed = run(system_info.main, {"free_for": "later"})
    assert failed and "free_for" in result["msg"]


def test_another_spelling_of_the_stored_mac_is_no_change(api, run):
    api.add_system("s3.lab.test", netboot={"mac": "52:54:00:bb:00:01", "loaders": ["ipxe"]})
    for spelling in ("52:54:00:BB:00:01", "52-54-00-bb-00-01", "525400BB0001", "5254.00bb.0001"):
        result, failed = run(system.main, {"fqdn": "s3.lab.test", "netboot": {"mac": spelling}})
        assert not failed and not result["changed"] and api.writes == [], spelling
    result, failed = run(system.main, {"fqdn": "s3.lab.test", "netboot": {"mac": "52-54-00-BB-00-02"}})
    assert api.writes == [("PATCH", "/systems/s3.lab.test", {"netboot": {"mac": "52:54:00:bb:00:02", "loaders": ["ipxe"]}})]
    assert system.normal_mac("not a mac") == "not a mac"  # sent as given: the server says what is wrong
