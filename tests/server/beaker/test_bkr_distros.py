"""bkr distros-list and distro-trees-list (anonymous, as in Beaker) over the trees /api/v1 registered."""
from __future__ import annotations

import json

import pytest


@pytest.fixture(scope="module")
def trees(hub):
    made = {}
    for name, arch, family, tags, labs in (
            ("DistroA-1.0", "x86_64", "DistroA1", ["RELEASED"], []),
            ("DistroA-1.0", "aarch64", "DistroA1", ["RELEASED"], []),
            ("DistroA-1.1-nightly", "x86_64", "DistroA1", [], ["lab-b"]),
            ("DistroB-2", "x86_64", "DistroB2", ["RELEASED", "STABLE"], [])):
        response = hub.api().post("/distro-trees", json={
            "name": name, "arch": arch, "family": family, "tags": tags, "labs": labs,
            "url": f"http://mirror.lab.test/{name}/{arch}/", "kernel": "vmlinuz", "initrd": "initrd.img"})
        assert response.status_code == 201, response.text
        made[name, arch] = response.json()["id"]
    return made


def anonymous(hub):
    return hub.bkr("nobody-logs-in", "no password needed")


def trees_listed(hub, *args: str) -> list[tuple[str, str]]:
    result = anonymous(hub)("distro-trees-list", "--format", "json", "--limit", "50", *args)
    if result.returncode == 1 and result.stdout.strip() == "[]":  # nothing matches: exit status 1, as in Beaker
        return []
    assert result.returncode == 0, result.stderr
    return sorted((t["distro_name"], t["arch"]) for t in json.loads(result.stdout))


def test_distro_trees_list_filters(hub, trees):
    assert trees_listed(hub, "--name", "DistroA%") == [("DistroA-1.0", "aarch64"), ("DistroA-1.0", "x86_64"),
                                                       ("DistroA-1.1-nightly", "x86_64")]
    assert trees_listed(hub, "--family", "DistroA1", "--arch", "aarch64") == [("DistroA-1.0", "aarch64")]
    assert trees_listed(hub, "--tag", "RELEASED", "--tag", "STABLE") == [("DistroB-2", "x86_64")]
    assert trees_listed(hub, "--treepath", "%nightly%") == [("DistroA-1.1-nightly", "x86_64")]
    assert trees_listed(hub, "--labcontroller", "lab-b", "--name", "DistroA-1.1%") == [
        ("DistroA-1.1-nightly", "x86_64")]
    assert trees_listed(hub, "--distro-tree-id", str(trees["DistroB-2", "x86_64"])) == [("DistroB-2", "x86_64")]
    assert trees_listed(hub, "--xml-filter", '<distro_arch op="=" value="aarch64"/>') == [("DistroA-1.0", "aarch64")]
    assert trees_listed(hub, "--name", "NoSuch%") == []
    tabular = anonymous(hub).ok("distro-trees-list", "--name", "DistroB-2")
    assert f"ID: {trees['DistroB-2', 'x86_64']}" in tabular and "Tags: RELEASED, STABLE" in tabular
    # the same trees as the API lists
    api = {(t["name"], t["arch"]) for t in hub.api().get("/distro-trees").json()}
    assert set(trees_listed(hub)) == api


def test_distros_list_groups_trees_by_name(hub, trees):
    result = anonymous(hub).ok("distros-list", "--format", "json", "--name", "DistroA%", "--limit", "10")
    distros = {d["distro_name"]: d for d in json.loads(result)}
    assert sorted(distros) == ["DistroA-1.0", "DistroA-1.1-nightly"]
    assert distros["DistroA-1.0"]["distro_id"] == min(trees["DistroA-1.0", "x86_64"], trees["DistroA-1.0", "aarch64"])
    assert distros["DistroA-1.0"]["distro_version"] == "DistroA1" and distros["DistroA-1.0"]["distro_tags"] == [
        "RELEASED"]
    assert [d["distro_name"] for d in json.loads(anonymous(hub).ok("distros-list", "--format", "json",
                                                                   "--tag", "STABLE"))] == ["DistroB-2"]


def test_labcontroller_list_names_the_labs_of_systems_and_agents(hub):
    hub.add_system("lc1.lab.test", lab="lab-north")
    hub.server.admin_cli("lab", "add", "lab-south")
    listed = anonymous(hub).ok("labcontroller-list").split()
    assert "lab-north" in listed and "lab-south" in listed
    assert listed == sorted(set(listed))  # each lab once, by name
