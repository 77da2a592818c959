"""bkr system-list: Beaker's Atom feeds with their searches and --xml-filter, against what /api/v1 says."""
from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def lab(hub):
    """sl1 manual x86_64 in pool sl-pool; sl2 manual aarch64, held by bob; sl3 automated x86_64 owned by alice;
    sl4 broken; sl5 removed; sl6 manual, lent to bob."""
    api = hub.api()
    hub.add_system("sl1.bkr.test", condition="manual", memory_mb=4096)
    hub.add_system("sl2.bkr.test", "aarch64", condition="manual", memory_mb=1024)
    hub.add_system("sl3.bkr.test", condition="automated", owner="alice")
    hub.add_system("sl4.bkr.test", condition="broken")
    hub.add_system("sl5.bkr.test", condition="manual")
    hub.add_system("sl6.bkr.test", condition="manual")
    assert api.post("/pools", json={"name": "sl-pool"}).status_code == 201
    assert api.post("/pools/sl-pool/systems", json={"fqdn": "sl1.bkr.test"}).status_code == 200
    assert api.delete("/systems/sl5.bkr.test").status_code == 204
    assert hub.api("bob").post("/reservations", json={"system": "sl2.bkr.test"}).status_code == 201
    assert api.post("/systems/sl6.bkr.test/loan", json={"recipient": "bob"}).status_code == 201
    return hub


def listed(hub, user: str, *args: str) -> list[str]:
    result = hub.bkr(user)("system-list", *args)
    if result.returncode == 1 and result.stderr.strip() == "Nothing Matches":
        return []
    assert result.returncode == 0, result.stderr
    return sorted(line for line in result.stdout.split() if line.endswith(".bkr.test"))


def test_all_and_removed_lists(lab):
    assert listed(lab, "alice") == ["sl1.bkr.test", "sl2.bkr.test", "sl3.bkr.test", "sl4.bkr.test", "sl6.bkr.test"]
    assert listed(lab, "alice", "--removed") == ["sl5.bkr.test"]
    api = sorted(s["fqdn"] for s in lab.api("alice").get("/systems", params={"condition": "removed"}).json()
                 if s["fqdn"].endswith(".bkr.test"))
    assert api == ["sl5.bkr.test"]


def test_available_free_and_mine_follow_the_access_rules(lab):
    # alice may reserve the manual ones nobody borrows, and owns sl3 (automated: the scheduler gives it to her)
    assert listed(lab, "alice", "--available") == ["sl1.bkr.test", "sl2.bkr.test", "sl3.bkr.test"]
    assert listed(lab, "alice", "--free") == ["sl1.bkr.test", "sl3.bkr.test"]  # bob holds sl2
    assert listed(lab, "alice", "--mine") == ["sl3.bkr.test"]
    assert listed(lab, "bob", "--mine") == ["sl2.bkr.test", "sl6.bkr.test"]  # held, borrowed
    assert "sl6.bkr.test" in listed(lab, "bob", "--free")


def test_searches_and_xml_filter(lab):
    assert listed(lab, "alice", "--arch", "aarch64") == ["sl2.bkr.test"]
    assert listed(lab, "alice", "--pool", "sl-pool") == ["sl1.bkr.test"]
    assert listed(lab, "alice", "--status", "Broken") == ["sl4.bkr.test"]
    assert listed(lab, "alice", "--type", "Machine", "--arch", "x86_64") == [
        "sl1.bkr.test", "sl3.bkr.test", "sl4.bkr.test", "sl6.bkr.test"]
    assert listed(lab, "alice", "--free", "--xml-filter", '<memory op="&gt;=" value="2048"/>') == ["sl1.bkr.test"]
    assert listed(lab, "alice", "--xml-filter",
                  '<hostRequires><hostname op="like" value="sl2.%"/></hostRequires>') == ["sl2.bkr.test"]
    assert "no pool named no-such-pool" in lab.bkr("alice").fails("system-list", "--pool", "no-such-pool")
    assert "not supported" in lab.bkr("alice").fails("system-list", "--dev-driver", "e1000")
