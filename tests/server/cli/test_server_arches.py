"""Architectures are data, as in Beaker: `lablease-server arch add` (or POST /api/v1/arches) makes an arch the
site did not know usable by systems, distro trees, host filters and advance reservations; until then each
refuses it by name. Run through the real CLI against a live server, checked through its API."""
from tests.server.cli.test_server_cli import run

REFUSED = 1
IA64_TREE = {"name": "RHEL-5.11", "family": "RedHatEnterpriseLinux5", "arch": "ia64", "variant": "Server",
             "url": "http://mirror.lab.test/rhel5/ia64/os/", "kernel": "images/pxeboot/vmlinuz",
             "initrd": "images/pxeboot/initrd.img"}


def ia64_job(arch: str = "ia64") -> dict:
    return {"recipe_sets": [{"recipes": [{"host_requires": {"field": "arch", "op": "=", "value": arch}}]}]}


def test_an_arch_the_site_does_not_know_is_refused_until_an_administrator_adds_it(server):
    listed = run(server, "arch", "list")
    assert listed.returncode == 0 and listed.stdout.split()[:2] == ["NAME", "ADDED"]
    assert {"x86_64", "s390x", "ppc64le", "aarch64"} <= set(listed.stdout.split()) and "ia64" not in listed.stdout
    refused = run(server, "system", "add", "itanium1.lab.test", "--arch", "ia64")
    assert refused.returncode == REFUSED and "unknown architecture 'ia64'; known: aarch64, armhfp" in refused.stderr
    assert "lablease-server arch add NAME" in refused.stderr
    status = server.admin.post("/distro-trees", json=IA64_TREE).status_code
    assert status == 422
    answer = server.admin.post("/jobs", json=ia64_job())
    assert answer.status_code == 422 and "unknown architecture 'ia64'" in answer.json()["detail"]
    answer = server.admin.post("/advance-reservations", json={
        "requires": {"field": "arch", "op": "=", "value": "ia64"}, "start": "2030-01-01T00:00:00Z", "duration": "1h"})
    assert answer.status_code == 422 and "unknown architecture 'ia64'" in answer.json()["detail"]
    # only administrators add one
    assert server.api("bob").post("/arches", json={"name": "ia64"}).status_code == 403

    added = run(server, "arch", "add", "ia64")
    assert (added.returncode, added.stdout) == (0, "architecture ia64 added: systems and distro trees may name it\n")
    assert "ia64" in [a["name"] for a in server.admin.get("/arches").json()]
    again = run(server, "arch", "add", "ia64")
    assert again.returncode == REFUSED and "architecture ia64 already exists" in again.stderr
    assert run(server, "system", "add", "itanium1.lab.test", "--arch", "ia64", "--condition", "automated").returncode == 0
    assert server.admin.get("/systems/itanium1.lab.test").json()["arch"] == "ia64"
    assert server.admin.post("/distro-trees", json=IA64_TREE).status_code == 201
    job = server.admin.post("/jobs", json=ia64_job())
    assert job.status_code == 201, job.json()
    assert server.admin.post(f"/jobs/{job.json()['id']}/cancel").status_code == 200
    # a like pattern names no arch; = and != name one
    assert server.admin.post("/jobs", json=ia64_job("nosuch")).status_code == 422


def test_the_api_adds_an_arch_and_refuses_a_bad_name(server):
    answer = server.admin.post("/arches", json={"name": "s390"})
    assert answer.status_code == 201 and answer.json() == {"name": "s390", "created_at": answer.json()["created_at"]}
    assert server.admin.post("/arches", json={"name": "two words"}).status_code == 422
    assert server.admin.post("/arches", json={"name": "s390"}).status_code == 409
