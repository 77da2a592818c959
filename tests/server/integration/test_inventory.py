"""A system's inventory through the API, and hostRequires filters over it choosing where recipes run."""
from pathlib import Path

import pytest

from .test_jobs_api import post_xml

DELL = {
    "vendor": "Dell Inc.", "model": "PowerEdge R740", "serial": "CZ12345", "system_type": "Machine",
    "numa_nodes": 2, "last_inventoried": "2026-01-10T08:00:00Z",
    "cpu": {"vendor": "GenuineIntel", "model_name": "Intel(R) Xeon(R) Gold 6130", "family": 6, "model": 85,
            "stepping": 4, "speed": 2100.0, "processors": 32, "cores": 16, "sockets": 2, "hyper": True,
            "flags": ["vmx", "avx2"]},
    "disks": [{"size": 480000000000, "sector_size": 512, "phys_sector_size": 512, "model": "SSD 480"},
              {"size": 4000000000000, "sector_size": 512, "phys_sector_size": 4096, "model": "HDD 4T"}],
    "devices": [{"bus": "pci", "type": "NIC", "vendor_id": "8086", "device_id": "1572", "driver": "i40e",
                 "description": "Ethernet Controller X710"}],
}
VM = {"vendor": "QEMU", "hypervisor": "KVM", "cpu": {"vendor": "AuthenticAMD", "flags": ["svm"]},
      "disks": [{"size": 21474836480, "sector_size": 512}],
      "devices": [{"bus": "virtio", "driver": "virtio_net", "description": "Virtio network device"}]}
PROTO = {"system_type": "Prototype"}


def test_the_inventory_is_set_changed_and_shown(lab):
    lab.system("dell.lab.test", memory_mb=65536, inventory=DELL)
    status, shown = lab.admin.get("/systems/dell.lab.test")
    assert status == 200
    inventory = shown["inventory"]
    assert (inventory["vendor"], inventory["hypervisor"], inventory["numa_nodes"]) == ("Dell Inc.", None, 2)
    assert inventory["cpu"]["flags"] == ["vmx", "avx2"] and inventory["cpu"]["processors"] == 32
    assert shown["cpus"] == 32  # processors is the system's cpus
    assert inventory["disks"] == DELL["disks"] and inventory["devices"] == DELL["devices"]
    assert inventory["last_inventoried"] == "2026-01-10T08:00:00Z"
    # A PATCH replaces what it gives and keeps the rest.
    status, changed = lab.admin.patch("/systems/dell.lab.test", {"inventory": {"hypervisor": "KVM", "disks": []}})
    assert status == 200, changed
    assert (changed["inventory"]["hypervisor"], changed["inventory"]["disks"]) == ("KVM", [])
    assert changed["inventory"]["devices"] == DELL["devices"] and changed["inventory"]["model"] == "PowerEdge R740"
    # The listing leaves the long lists out (each system's page has them).
    _, listed = lab.admin.get("/systems")
    assert listed[0]["inventory"]["vendor"] == "Dell Inc." and "devices" not in listed[0]["inventory"]


@pytest.mark.parametrize("inventory, field, reason", [
    ({"system_type": "Server"}, "inventory.system_type", "is not one of"),
    ({"disks": [{"size": -1}]}, "inventory.disks.0.size", "less than the minimum"),
    ({"cpu": {"flags": ["vmx", "vmx"]}}, "inventory.cpu.flags", "non-unique"),
    ({"colour": "red"}, "inventory.colour", "unknown field"),
    # processors are the system's cpus, which the API describes as at least 1: one rule for both names
    ({"cpu": {"processors": 0}}, "inventory.cpu.processors", "less than the minimum of 1"),
])
def test_a_wrong_inventory_is_refused_naming_the_field(lab, inventory, field, reason):
    lab.system("s.lab.test")
    status, problem = lab.admin.patch("/systems/s.lab.test", {"inventory": inventory})
    assert status == 422 and field in problem["detail"] and reason in problem["detail"], problem
    assert lab.admin.get("/systems/s.lab.test")[1]["inventory"]["system_type"] == "Machine"  # nothing written


def job(requires: str) -> bytes:
    return (f'<job><recipeSet><recipe><hostRequires>{requires}</hostRequires>'
            f'<task name="/distribution/check-install"/></recipe></recipeSet></job>').encode()


# hostRequires -> the system its recipe gets (None: it waits), on three systems that are all free (and a fourth,
# rack4, that bob's job keeps busy: a recipe only it matches could start one day, so it waits instead of being refused).
PLACEMENTS = [
    ('<system><vendor op="like" value="dell%"/></system>', "dell.lab.test"),
    ('<hypervisor value=""/><system_type value="Machine"/>', "dell.lab.test"),
    ('<system><hypervisor op="!=" value=""/></system>', "vm.lab.test"),
    ('<system_type value="Prototype"/>', "proto.lab.test"),
    ('<cpu><flag value="svm"/></cpu>', "vm.lab.test"),
    ('<cpu><and><cores op="&gt;=" value="16"/><hyper value="true"/><speed op="&gt;" value="2000.5"/></and></cpu>',
     "dell.lab.test"),
    ('<device op="=" bus="pci" vendor_id="8086"/>', "dell.lab.test"),
    ('<not><device op="=" driver="virtio_net"/></not><system><vendor op="!=" value=""/></system>', "dell.lab.test"),
    ('<disk><size op="&gt;=" value="2" units="TB"/><phys_sector_size value="4" units="KiB"/></disk>',
     "dell.lab.test"),
    ('<disk><and><size op="&lt;" value="100" units="GiB"/><sector_size value="512"/></and></disk>', "vm.lab.test"),
    ('<or><system><numanodes op="&gt;" value="1"/></system><cpu><flag value="svm"/></cpu></or>'
     '<arch value="x86_64"/><system><status value="Automated"/></system>', "dell.lab.test"),
    ('<last_inventoried value=""/><system><memory op="&lt;" value="8192"/></system>', "vm.lab.test"),
    ('<system><last_inventoried op="&gt;" value="2026-01-09"/></system>', "dell.lab.test"),
    ('<system><location value="rack 4"/></system>', None),  # none of the free three says where it is
    ('<disk><size op="&gt;" value="10" units="TiB"/></disk>', None),  # none of the free three is that big
]


def three_systems(lab):
    lab.system("dell.lab.test", condition="automated", memory_mb=65536, lab="brno", inventory=DELL,
               power={"driver": "ipmitool", "address": "bmc-dell.lab.test", "user": "root", "password": "pw"})
    lab.system("vm.lab.test", condition="automated", memory_mb=4096, inventory=VM)
    lab.system("proto.lab.test", condition="automated", memory_mb=8192, inventory=PROTO)
    assert lab.admin.post("/pools", {"name": "big"})[0] == 201
    assert lab.admin.post("/pools/big/systems", {"fqdn": "dell.lab.test"})[0] == 200


def busy_rack4(lab):
    """An Automated system in rack 4 with a 16 TiB disk, which bob's job keeps busy."""
    lab.system("rack4.lab.test", condition="automated", memory_mb=16384,
               inventory={"location": "rack 4", "disks": [{"size": 16 * 2**40, "sector_size": 512}]})
    status, held = post_xml(lab, "bob", job('<hostname value="rack4.lab.test"/>'))
    assert status == 201 and held["recipe_sets"][0]["recipes"][0]["system"] == "rack4.lab.test", held


def test_recipes_run_on_the_systems_their_inventory_filters_choose(lab):
    three_systems(lab)
    busy_rack4(lab)
    got = []
    for requires, _ in PLACEMENTS:
        status, submitted = post_xml(lab, "alice", job(requires))
        assert status == 201, (requires, submitted)
        [recipe] = submitted["recipe_sets"][0]["recipes"]
        got.append(recipe["system"])
        assert lab.alice.post(f"/jobs/{submitted['id']}/cancel")[0] == 200  # the system is free for the next
    assert got == [expected for _, expected in PLACEMENTS]


def test_the_waiting_recipe_says_which_inventory_filter_ruled_systems_out(lab):
    lab.system("vm.lab.test", condition="automated", inventory=VM)
    lab.system("dell.lab.test", condition="automated", inventory=DELL)  # has vmx, but bob's job keeps it busy
    assert post_xml(lab, "bob", job('<hostname value="dell.lab.test"/>'))[0] == 201
    status, submitted = post_xml(lab, "alice", job('<cpu><flag value="vmx"/></cpu>'))
    assert status == 201, submitted
    [recipe] = submitted["recipe_sets"][0]["recipes"]
    why = lab.alice.get(f"/recipes/{recipe['id']}")[1]["why"]
    assert why["ruled_out"] == {"cpu_flag = vmx": 1}, why  # vm.lab.test; the busy dell is a candidate
    assert [busy["system"] for busy in why["busy"]] == ["dell.lab.test"], why


@pytest.mark.parametrize("requires, message", [
    ('<system><colour value="red"/></system>', "line 1: <colour> is not allowed inside <system>"),
    ('<system><loaned op="&gt;" value="bob"/></system>', "line 1: <loaned> op"),
    ('<disk><size op="&gt;" value="big"/></disk>', "line 1: <size> value: 'big' is not a whole number"),
])
def test_unknown_or_wrong_filters_are_refused_with_the_line(lab, requires, message):
    status, problem = post_xml(lab, "alice", job(requires))
    assert status == 422 and message in problem["detail"], problem


def test_a_loaned_filter_waits_for_the_loan_and_says_why(lab):
    """<loaned> is judged when the recipe is placed, on the loan in force then (the candidates, worked out
    once, leave it open): the recipe waits, saying so, until a system is lent to bob, then runs there."""
    lab.system("a.lab.test", condition="automated")
    lab.system("b.lab.test", condition="automated")
    status, submitted = post_xml(lab, "bob", job('<system><loaned op="=" value="bob"/></system>'))
    assert status == 201, submitted
    [recipe] = submitted["recipe_sets"][0]["recipes"]
    assert recipe["system"] is None
    why = lab.bob.get(f"/recipes/{recipe['id']}")[1]["why"]
    assert why["ruled_out"] == {"loaned = bob": 2}, why
    assert why["category"] == "live" and "2 system(s) may once" in why["sentence"], why  # not "never"
    assert lab.admin.post("/systems/b.lab.test/loan", {"recipient": "bob"})[0] == 201
    status, submitted = post_xml(lab, "bob", job('<system><loaned op="=" value="bob"/></system>'))
    assert status == 201 and submitted["recipe_sets"][0]["recipes"][0]["system"] == "b.lab.test", submitted
    # not lent to anybody: the other one
    status, submitted = post_xml(lab, "bob", job('<system><loaned op="=" value=""/></system>'))
    assert submitted["recipe_sets"][0]["recipes"][0]["system"] == "a.lab.test", submitted


def test_a_user_filter_is_judged_on_who_holds_the_system_now(lab):
    lab.system("a.lab.test", condition="automated")
    lab.system("b.lab.test", condition="automated")
    status, submitted = post_xml(lab, "alice", job(""))  # alice's recipe holds a.lab.test
    assert submitted["recipe_sets"][0]["recipes"][0]["system"] == "a.lab.test", submitted
    status, submitted = post_xml(lab, "bob", job('<system><user op="=" value=""/></system>'))
    assert status == 201 and submitted["recipe_sets"][0]["recipes"][0]["system"] == "b.lab.test", submitted
    status, submitted = post_xml(lab, "bob", job('<system><user op="=" value="alice"/></system>'))
    [recipe] = submitted["recipe_sets"][0]["recipes"]
    assert recipe["system"] is None  # alice's system is busy; the other is held by bob's first recipe
    why = lab.bob.get(f"/recipes/{recipe['id']}")[1]["why"]
    assert why["ruled_out"] == {"user = alice": 1} and why["candidates"] == 1, why


CORPUS = sorted((Path(__file__).parents[1] / "jobxml" / "corpus").glob("inventory-*.xml"))


def test_the_inventory_corpus_is_accepted_and_scheduled_where_each_whiteboard_says(lab):
    """Each recipe of these Beaker-style documents names in its whiteboard the system it must get."""
    three_systems(lab)
    assert len(CORPUS) >= 3
    for path in CORPUS:
        status, submitted = post_xml(lab, "alice", path.read_bytes())
        assert status == 201, (path.name, submitted)
        recipes = [r for rs in submitted["recipe_sets"] for r in rs["recipes"]]
        assert [r["system"] for r in recipes] == [r["whiteboard"] for r in recipes], path.name
        assert lab.alice.post(f"/jobs/{submitted['id']}/cancel")[0] == 200
