"""Systems over the API: add, change (logged), list with filters and free windows, remove."""
from datetime import timedelta

from .conftest import START, at

H = timedelta(hours=1)


def test_add_and_read(lab):
    body = lab.system("S1.Lab.Test", cpus=8, memory_mb=16384, lab="lab1", attributes={"gpu": "nvidia"},
                      power={"driver": "ipmitool", "address": "bmc1", "user": "root", "password": "hunter2"})
    assert body["fqdn"] == "s1.lab.test" and body["usage"] == "idle" and body["owner"] == "admin"
    assert body["attributes"] == {"gpu": ["nvidia"]}
    assert body["power"] == {"driver": "ipmitool", "address": "bmc1", "user": "root"}  # the password never comes back
    status, problem = lab.admin.post("/systems", {"fqdn": "s1.lab.test", "arch": "x86_64"})
    assert status == 409 and "already exists" in problem["detail"]


def test_only_admins_add_systems(lab):
    status, problem = lab.alice.post("/systems", {"fqdn": "s1.lab.test", "arch": "x86_64"})
    assert status == 403 and "administrators" in problem["detail"]


def test_invalid_systems(lab):
    for body, field in [({"fqdn": "bad name!", "arch": "x86_64"}, "fqdn"), ({"fqdn": "a.b", "arch": "vax"}, "arch"),
                        ({"fqdn": "a.b", "arch": "x86_64", "condition": "sleepy"}, "condition"),
                        ({"fqdn": "a.b", "arch": "x86_64", "cpus": 0}, "cpus"),
                        ({"fqdn": "a.b", "arch": "x86_64", "owner": "nobody"}, "owner"),
                        ({"fqdn": "a.b"}, "arch")]:
        status, problem = lab.admin.post("/systems", body)
        assert status == 422 and problem["field"] == field, (body, problem)
    _, listed = lab.admin.get("/systems")
    assert listed == []


def test_changes_are_logged_with_old_and_new(lab):
    lab.system()
    lab.clock.advance(minutes=5)
    status, body = lab.admin.patch("/systems/s1.lab.test", {"condition": "broken", "owner": "alice", "lab": "lab2"})
    assert status == 200 and body["condition"] == "broken" and body["owner"] == "alice"
    _, log = lab.alice.get("/systems/s1.lab.test/activity")
    changes = {(e["field"], e["old"], e["new"]) for e in log if e["action"] == "changed"}
    assert changes == {("condition", "manual", "broken"), ("owner", "admin", "alice"), ("lab", None, "lab2")}
    assert all(e["user"] == "admin" and e["at"] == at(START + timedelta(minutes=5)) for e in log if e["action"] == "changed")
    # the new owner may edit; others may not
    assert lab.alice.patch("/systems/s1.lab.test", {"cpus": 4})[0] == 200
    status, problem = lab.bob.patch("/systems/s1.lab.test", {"cpus": 2})
    assert status == 403 and "edit_system" in problem["detail"]


def test_a_failed_change_writes_nothing(lab):
    lab.system()
    status, _ = lab.admin.patch("/systems/s1.lab.test", {"lab": "lab9", "owner": "nobody"})
    assert status == 422
    _, body = lab.admin.get("/systems/s1.lab.test")
    assert body["lab"] is None
    _, log = lab.admin.get("/systems/s1.lab.test/activity")
    assert [e["action"] for e in log] == ["created"]


def test_filters_and_free_windows(lab):
    lab.system("a.lab.test", lab="lab1")
    lab.system("b.lab.test", lab="lab2", arch="aarch64")
    lab.system("c.lab.test", lab="lab1")
    lab.alice.post("/reservations", {"system": "a.lab.test", "duration": "2h"})
    lab.bob.post("/reservations", {"system": "c.lab.test", "start": at(START + 5 * H), "duration": "1h"})

    def names(**filters):
        status, body = lab.alice.get("/systems", **filters)
        assert status == 200, body
        return [s["fqdn"] for s in body]

    assert names() == ["a.lab.test", "b.lab.test", "c.lab.test"]
    assert names(arch="aarch64") == ["b.lab.test"]
    assert names(lab="lab1") == ["a.lab.test", "c.lab.test"]
    assert names(free_from=at(START), free_until=at(START + H)) == ["b.lab.test", "c.lab.test"]
    assert names(free_from=at(START + 2 * H), free_until=at(START + 6 * H)) == ["a.lab.test", "b.lab.test"]
    assert names(free_from=at(START + 2 * H)) == ["a.lab.test", "b.lab.test"]  # open-ended: free from then on
    assert names(reserved_by="me") == ["a.lab.test"]
    status, problem = lab.alice.get("/systems", pool="nosuchpool")
    assert status == 422 and "no pool named nosuchpool" in problem["detail"]
    status, problem = lab.alice.get("/systems", free_from="noon")
    assert status == 422 and problem["field"] == "free_from"


def test_remove_refuses_while_reserved_unless_forced(lab):
    lab.system()
    _, r = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "2h"})
    status, problem = lab.admin.delete("/systems/s1.lab.test")
    assert status == 409 and "force" in problem["detail"]
    status, _ = lab.admin.delete("/systems/s1.lab.test", force="true")
    assert status == 204
    _, body = lab.admin.get("/systems/s1.lab.test")
    assert body["condition"] == "removed"
    _, returned = lab.alice.get(f"/reservations/{r['id']}")
    assert returned["state"] == "returned" and returned["returned_at"] == at(START)
    status, problem = lab.alice.post("/reservations", {"system": "s1.lab.test"})
    assert status == 403 and "removed" in problem["detail"]


def test_a_broadcast_multicast_or_zero_mac_is_no_machine_s_netboot_mac(lab):
    """ff:ff:ff:ff:ff:ff (or a multicast or all-zero MAC) is no network card's own: its boot file would be
    every machine's or none's; refused with what is wrong, the system unwritten."""
    for mac, why in (("FF:FF:FF:FF:FF:FF", "broadcast or multicast"), ("01-00-5e-00-00-fb", "broadcast or multicast"),
                     ("000000000000", "all zeros")):
        status, problem = lab.admin.post("/systems", {"fqdn": "bcast.lab.test", "arch": "x86_64",
                                                      "netboot": {"mac": mac}})
        assert status == 422 and why in problem["detail"], (mac, problem)
    assert lab.admin.get("/systems/bcast.lab.test")[0] == 404
    lab.system("bcast.lab.test", netboot={"mac": "02:00:00:00:00:01"})  # locally administered unicast is fine
    status, problem = lab.admin.patch("/systems/bcast.lab.test", {"netboot": {"mac": "ff:ff:ff:ff:ff:ff"}})
    assert status == 422 and lab.admin.get("/systems/bcast.lab.test")[1]["netboot"]["mac"] == "02:00:00:00:00:01"


def test_unknown_routes_and_methods_are_problems(lab):
    status, problem = lab.alice.get("/nothing-here")
    assert status == 404 and problem["status"] == 404
    response = lab.client.put("/api/v1/systems", headers={"Authorization": f"Bearer {lab.tokens['alice']}"})
    assert response.status_code == 405 and response.mimetype == "application/problem+json"
    assert "GET" in response.headers["Allow"]


def test_a_netboot_mac_belongs_to_one_system_whatever_its_spelling(lab):
    """Provisioning one of two systems sharing a MAC would write the other's boot file: the second is refused
    (409 naming the holder), by POST and by PATCH, in every spelling; each MAC is kept in one spelling."""
    lab.system("m1.lab.test", netboot={"mac": "52:54:00:BB:00:01"})
    assert lab.admin.get("/systems/m1.lab.test")[1]["netboot"]["mac"] == "52:54:00:bb:00:01"
    for spelling in ("52:54:00:bb:00:01", "52:54:00:BB:00:01", "52-54-00-bb-00-01", "525400BB0001", "5254.00bb.0001"):
        status, problem = lab.admin.post("/systems", {"fqdn": "m2.lab.test", "arch": "x86_64",
                                                      "netboot": {"mac": spelling}})
        assert status == 409, (spelling, problem)
        assert "52:54:00:bb:00:01 is already m1.lab.test's" in problem["detail"]
    assert lab.admin.get("/systems/m2.lab.test")[0] == 404  # nothing half written
    lab.system("m2.lab.test", netboot={"mac": "525400bb0002"})
    status, problem = lab.admin.patch("/systems/m2.lab.test", {"netboot": {"mac": "52-54-00-BB-00-01"}})
    assert status == 409 and "m1.lab.test" in problem["detail"]
    assert lab.admin.get("/systems/m2.lab.test")[1]["netboot"] == {"mac": "52:54:00:bb:00:02"}
    # its own MAC again, in another spelling, is no conflict; a MAC given up is free for another system
    assert lab.admin.patch("/systems/m1.lab.test", {"netboot": {"mac": "52-54-00-bb-00-01"}})[0] == 200
    assert lab.admin.patch("/systems/m1.lab.test", {"netboot": {}})[0] == 200
    assert lab.admin.patch("/systems/m2.lab.test", {"netboot": {"mac": "52:54:00:bb:00:01"}})[0] == 200
    lab.system("m3.lab.test")  # systems without a MAC are many
    lab.system("m4.lab.test", netboot={"loaders": ["ipxe"]})


def test_a_change_to_removed_follows_the_rule_of_removing(lab):
    """PATCH condition removed is a removal: refused while someone holds or borrows the system, naming them;
    forced, their reservation and loan end (as DELETE ?force=true does)."""
    lab.system()
    lab.admin.post("/systems/s1.lab.test/loan", {"recipient": "alice", "duration": "2d"})
    _, r = lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "2h"})
    for refused in (lambda: lab.admin.patch("/systems/s1.lab.test", {"condition": "removed"}),
                    lambda: lab.admin.delete("/systems/s1.lab.test")):
        status, problem = refused()
        assert status == 409
        assert problem["detail"] == (f"s1.lab.test has reservation {r['id']} of alice and a loan to alice; "
                                     "remove it with force to return them")
    assert lab.admin.get("/systems/s1.lab.test")[1]["condition"] == "manual"
    status, system = lab.admin.patch("/systems/s1.lab.test", {"condition": "removed", "force": True})
    assert status == 200 and system["condition"] == "removed"
    assert system["reservation"] is None and system["loan"] is None
    _, returned = lab.alice.get(f"/reservations/{r['id']}")
    assert returned["state"] == "returned"
    assert lab.alice.get("/systems/s1.lab.test/loan")[0] == 404
    assert lab.alice.patch("/systems/s1.lab.test/loan", {"extend_by": "1d"})[0] == 404


def test_removing_a_lent_system_ends_its_loan(lab):
    lab.system()
    lab.admin.post("/systems/s1.lab.test/loan", {"recipient": "alice"})
    status, problem = lab.admin.delete("/systems/s1.lab.test")
    assert status == 409 and "a loan to alice" in problem["detail"]
    assert lab.admin.delete("/systems/s1.lab.test", force="true")[0] == 204
    assert lab.alice.get("/systems/s1.lab.test/loan")[0] == 404


def test_an_import_is_all_or_nothing_on_both_databases(lab):
    """Each system of an import in its own savepoint (its refusals its own), the file's writes one transaction."""
    import pytest

    from lablease.cli.server import SERVER
    from lablease.cli.server_import import ImportRefused, import_file
    from lablease.services.handlers import unit_of_work

    lab.system("m1.lab.test", netboot={"mac": "52:54:00:ee:00:01"})
    text = ("- {fqdn: m2.lab.test, arch: x86_64, netboot: {mac: 52-54-00-ee-00-02}}\n"
            "- {fqdn: m3.lab.test, arch: x86_64, netboot: {mac: 525400EE0001}}\n"
            "- {fqdn: m4.lab.test, arch: x86_64, netboot: {mac: 525400EE0002}}\n")
    with unit_of_work(lab.db, lab.settings) as uow:
        with pytest.raises(ImportRefused) as refused:
            import_file(uow, SERVER, START, "s.yml", text, False)
        uow.commit()  # what a caller that ignored the refusal would commit: nothing of the file (not m2)
    assert str(refused.value).splitlines()[1:] == [
        "s.yml:2: system 2 (m3.lab.test): netboot MAC 52:54:00:ee:00:01 is already m1.lab.test's; each system needs "
        "its own (provisioning one would write the other's boot file)",
        "s.yml:3: system 3 (m4.lab.test): netboot MAC 52:54:00:ee:00:02 is already m2.lab.test's; each system needs "
        "its own (provisioning one would write the other's boot file)"]
    assert lab.admin.get("/systems/m2.lab.test")[0] == 404
    with unit_of_work(lab.db, lab.settings) as uow:
        result = import_file(uow, SERVER, START, "s.yml", text.replace("EE0001", "EE0003").replace("EE0002", "EE0004"),
                             False)
        uow.commit()
    assert result["added"] == ["m2.lab.test", "m3.lab.test", "m4.lab.test"]
    assert lab.admin.get("/systems/m4.lab.test")[1]["netboot"]["mac"] == "52:54:00:ee:00:04"
