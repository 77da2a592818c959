"""bkr system-reserve/-release/-status/-power/-provision and loan-grant/-return, checked through /api/v1."""
from __future__ import annotations

import json

POWER = {"driver": "ipmitool", "address": "bmc-bkr", "user": "root", "password": "s3cr3t-pw"}
TREE = {"name": "BkrOS-9", "family": "BkrOS9", "arch": "x86_64", "url": "http://mirror.lab.test/bkros/",
        "kernel": "vmlinuz", "initrd": "initrd.img"}


def manual(hub, fqdn: str, **fields) -> str:
    return hub.add_system(fqdn, condition="manual", **fields)


def holder(hub, fqdn: str):
    return hub.api().get(f"/systems/{fqdn}").json()["reservation"]


def test_reserve_status_and_release(hub):
    fqdn = manual(hub, "res1.bkr.test")
    alice = hub.bkr("alice")
    alice.ok("system-reserve", fqdn)
    reservation = holder(hub, fqdn)
    assert reservation["user"] == "alice"
    status = json.loads(alice.ok("system-status", "--format", "json", fqdn))
    assert status["condition"] == "Manual" and status["current_reservation"]["user_name"] == "alice"
    assert "User: alice" in alice.ok("system-status", fqdn)
    # the same rule as the API: bob cannot take or return what alice holds
    assert "XML-RPC fault:" in hub.bkr("bob").fails("system-reserve", fqdn)
    assert "HTTP error: 403" in hub.bkr("bob").fails("system-release", fqdn)
    alice.ok("system-release", fqdn)
    assert holder(hub, fqdn) is None
    assert hub.api("alice").get(f"/reservations/{reservation['id']}").json()["state"] == "returned"
    assert "is not reserved" in alice.fails("system-release", fqdn)


def test_loans_grant_and_return(hub):
    fqdn = manual(hub, "loan1.bkr.test")
    admin = hub.bkr("admin")
    admin.ok("loan-grant", "--recipient", "bob", "--comment", "for the demo", fqdn)
    loan = hub.api().get(f"/systems/{fqdn}/loan").json()
    assert (loan["recipient"], loan["lender"], loan["comment"]) == ("bob", "admin", "for the demo")
    assert "Comment: for the demo" in hub.bkr("bob").ok("system-status", fqdn)
    assert "XML-RPC fault:" in hub.bkr("alice").fails("system-reserve", fqdn)  # lent to bob: only bob may
    hub.bkr("bob").ok("loan-return", fqdn)
    assert hub.api().get(f"/systems/{fqdn}/loan").status_code == 404
    assert "HTTP error: 403" in hub.bkr("alice").fails("loan-grant", fqdn)  # loan_any is not alice's


def commands_of(hub, fqdn: str) -> list[str]:
    return [c["action"] for c in reversed(hub.api().get(f"/systems/{fqdn}/commands").json())]


def test_power_actions_queue_commands(hub):
    fqdn = manual(hub, "pow1.bkr.test", power=POWER)
    alice = hub.bkr("alice")
    alice.ok("system-reserve", fqdn)
    alice.ok("system-power", "--action", "on", fqdn)
    alice.ok("system-power", "--clear-netboot", fqdn)  # the default action: reboot, as off then on
    assert commands_of(hub, fqdn) == ["on", "netboot_clear", "off", "on"]
    alice.ok("system-power", "--action", "interrupt", fqdn)  # an NMI: ipmitool's chassis power diag
    assert commands_of(hub, fqdn)[-1] == "interrupt"
    simulated = manual(hub, "pow2.bkr.test", power={"driver": "virtual"})
    alice.ok("system-reserve", simulated)
    assert ("pow2.bkr.test: power driver virtual cannot send an interrupt (NMI): only ipmitool, redfish, "
            "libvirt and qemu can") in alice.fails("system-power", "--action", "interrupt", simulated)
    assert commands_of(hub, simulated) == []
    # held by alice: the admin's power action needs --force
    assert "is in use by alice" in hub.bkr("admin").fails("system-power", "--action", "off", fqdn)
    hub.bkr("admin").ok("system-power", "--action", "off", "--force", fqdn)
    assert commands_of(hub, fqdn)[-1] == "off"
    assert "HTTP error: 403" in hub.bkr("bob").fails("system-power", "--action", "off", "--force", fqdn)


def test_provision_installs_the_distro_tree(hub):
    fqdn = manual(hub, "prov1.bkr.test", power=POWER, netboot={"mac": "52:54:00:bb:cc:01"})
    tree = hub.api().post("/distro-trees", json=TREE).json()
    alice = hub.bkr("alice")
    alice.ok("system-reserve", fqdn)
    alice.ok("system-provision", "--distro-tree", str(tree["id"]), "--ks-meta", "no_autopart",
             "--kernel-options", "console=ttyS0", fqdn)
    installation = hub.api("alice").get(f"/systems/{fqdn}/installations").json()[0]
    assert (installation["user"], installation["distro_tree"]["id"]) == ("alice", tree["id"])
    assert installation["ks_meta"] == "no_autopart" and installation["kernel_options"] == "console=ttyS0"
    assert commands_of(hub, fqdn)[-2:] == ["netboot_install", "reboot"]
    assert "only the current holder" in hub.bkr("bob").fails("system-provision", "--distro-tree",
                                                             str(tree["id"]), fqdn)


def test_provision_with_a_kickstart_of_ones_own(hub, tmp_path):
    """The system's owner may bring a kickstart template (job_kickstarts: admins_and_owners), as in a job."""
    fqdn = manual(hub, "prov2.bkr.test", power=POWER, netboot={"mac": "52:54:00:bb:cc:02"}, owner="alice")
    tree = hub.api().get("/distro-trees", params={"name": TREE["name"]}).json()
    tree = tree[0] if tree else hub.api().post("/distro-trees", json=TREE).json()
    kickstart = tmp_path / "ks.cfg"
    kickstart.write_text("# my own kickstart for {{ system.fqdn }}\ninstall\nurl --url={{ distro.url }}\n")
    alice = hub.bkr("alice")
    alice.ok("system-reserve", fqdn)
    alice.ok("system-provision", "--distro-tree", str(tree["id"]), "--kickstart", str(kickstart),
             "--kernel-options-post", "quiet", fqdn)
    installation = hub.api("alice").get(f"/systems/{fqdn}/installations").json()[0]
    shown = hub.api("alice").get(f"/installations/{installation['id']}").json()["kickstart"]
    assert shown.startswith(f"# my own kickstart for {fqdn}") and "lablease" in shown  # its callbacks appended
    # bob owns nothing here: his own kickstart is refused, as a job's would be
    fqdn = manual(hub, "prov3.bkr.test", power=POWER, netboot={"mac": "52:54:00:bb:cc:03"})
    hub.bkr("bob").ok("system-reserve", fqdn)
    refused = hub.bkr("bob").fails("system-provision", "--distro-tree", str(tree["id"]), "--kickstart",
                                   str(kickstart), fqdn)
    assert "allowed only to administrators and the system's owner" in refused
