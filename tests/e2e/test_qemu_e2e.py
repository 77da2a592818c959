"""Real netboot, proven: QEMU VMs boot from lablease's own netboot files and install through its kickstart.

Firmware (SeaBIOS), boot loader (QEMU's iPXE ROM), kernel and installer are nobody's here: the
guest is Debian's cloud kernel with a busybox stand-in installer that runs the kickstart's own
%pre/%post sections (tests/support/guest.py). lablease's server and worker drive everything through
the `qemu` power driver; the VMs reach the server at 10.0.2.2 (QEMU's user network), the address
the lab's `install_url` gives. Two boots: install, then the rewritten config chains to the disk,
whose first boot calls postinstall_done.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import time

import pytest

from tests.support.agents import Agent
from tests.support.guest import build_guest, GuestFiles
from tests.support.live import LiveServer
from tests.support.postgres import free_port

pytestmark = pytest.mark.timeout(400)

LAB = "qemu"
AGENT_LAB = "qemu-agent"  # a lab whose agent runs its VMs, writes their netboot files and proxies their installers


@pytest.fixture(scope="module")
def guest():
    if shutil.which("qemu-system-x86_64") is None:
        if os.environ.get("CI"):
            pytest.fail("QEMU is missing under CI: `make test` installs it (scripts/ensure-qemu.sh)")
        pytest.skip("QEMU is not installed (run scripts/ensure-qemu.sh)")
    return build_guest()


def _server(guest, data_dir, install_timeout: str):
    """A real server (SQLite) whose labs `qemu` and `qemu-agent` are reached by VMs at 10.0.2.2 (the agent's lab
    through its agent's installer proxy), with the guest as a distro tree."""
    server = LiveServer(data_dir, settings={"install_timeout": install_timeout, "command_retry_delay": "1s"})
    server.proxy = f"127.0.0.1:{free_port()}"  # the agent's installer proxy, which VMs of AGENT_LAB are sent to
    server.env["LABLEASE_LABS"] = json.dumps({LAB: {"install_url": f"http://10.0.2.2:{server.port}"},
                                              AGENT_LAB: {"install_url": f"http://10.0.2.2:{server.proxy.split(':')[1]}"}})
    files = GuestFiles(guest)
    try:
        server.start()
        server.guest, server.files = guest, files
        for name, kernel in (("Guest-1", "vmlinuz"), ("Missing-1", "no-such-kernel")):
            tree = {"name": name, "family": "Guest1", "arch": "x86_64", "url": files.url(), "kernel": kernel,
                    "initrd": "initramfs.gz", "kernel_options": "console=ttyS0", "labs": [LAB, AGENT_LAB]}
            response = server.admin.post("/distro-trees", json=tree)
            assert response.status_code == 201, response.text
        yield server
    finally:
        server.stop()
        files.close()


@pytest.fixture(scope="module")
def lab(guest, tmp_path_factory):
    """A watchdog as long as a slow machine's boot: an emulated VM on two busy cores can take minutes to install."""
    yield from _server(guest, tmp_path_factory.mktemp("qemu-lab") / "data", "5m")


@pytest.fixture
def agent_lab(guest, tmp_path):
    """Its own server, for the agent's lab."""
    yield from _server(guest, tmp_path / "data", "5m")


@pytest.fixture
def stalling_lab(guest, tmp_path):
    """Its own server, whose 30 s watchdog the stall test waits out."""
    yield from _server(guest, tmp_path / "data", "30s")


def add_vm(lab, fqdn: str, mac: str, condition: str = "manual", where: str = LAB, home=None) -> None:
    """A VM of lab `where`, its disks in `home` (the data directory of what runs it: the server's, or an agent's)."""
    home = home or lab.data_dir
    images = home / "qemu-images"
    boot, state = lab.guest.make_disks(home / "vm-disks" / fqdn)
    images.mkdir(exist_ok=True)
    names = []
    for disk in (boot, state):
        name = f"{fqdn}-{disk.name}"
        shutil.move(disk, images / name)
        names.append(name)
    response = lab.admin.post("/systems", json={
        "fqdn": fqdn, "arch": "x86_64", "lab": where, "condition": condition,
        "power": {"driver": "qemu", "memory": 512, "disks": names}, "netboot": {"mac": mac}})
    assert response.status_code == 201, response.text


def installation_of(api, fqdn):
    system = api.get(f"/systems/{fqdn}").json()
    return api.get(f"/installations/{system['installation']['id']}").json() if system["installation"] else None


def wait_until_settled(api, fqdns, timeout=240.0) -> dict:
    deadline, settled = time.monotonic() + timeout, {}
    while time.monotonic() < deadline and len(settled) < len(fqdns):
        for fqdn in fqdns:
            found = installation_of(api, fqdn)
            if found and found["status"] in ("running", "failed", "cancelled", "completed"):
                settled[fqdn] = found
        time.sleep(1)
    missing = sorted(set(fqdns) - set(settled))
    assert not missing, f"no end in sight for {missing}: {[installation_of(api, f) for f in missing]}"
    return settled


def console(lab, fqdn, home=None) -> str:
    return ((home or lab.data_dir) / "qemu" / fqdn / "serial.log").read_text(errors="replace")


def usage(api, fqdn):
    return [c["new"] for c in api.get(f"/systems/{fqdn}/usage").json()["changes"] if c["field"] == "usage"]


def test_a_reservation_and_a_recipe_each_install_a_real_vm_in_two_boots(lab):
    add_vm(lab, "q1.lab.test", "52:54:00:0e:00:01")
    add_vm(lab, "q2.lab.test", "52:54:00:0e:00:02", condition="automated")
    alice, bob = lab.add_user("alice"), lab.add_user("bob")
    reservation = alice.post("/reservations", json={"system": "q1.lab.test", "duration": "1h"}).json()
    provision = alice.post("/systems/q1.lab.test/provision", json={"distro_tree": "Guest-1"})
    assert provision.status_code == 202, provision.text
    job = bob.post("/jobs", json={"recipe_sets": [{"recipes": [{
        "host_requires": {"field": "hostname", "op": "=", "value": "q2.lab.test"},
        "distro_requires": {"field": "distro_name", "op": "=", "value": "Guest-1"}, "runtime_limit": 3600}]}]})
    assert job.status_code == 201, job.text
    recipe = job.json()["recipe_sets"][0]["recipes"][0]

    # each installation is seen by its own people (docs/access.md): alice's reservation, bob's recipe
    settled = {**wait_until_settled(alice, ["q1.lab.test"]), **wait_until_settled(bob, ["q2.lab.test"])}
    for fqdn in ("q1.lab.test", "q2.lab.test"):
        assert settled[fqdn]["status"] == "running", (settled[fqdn], console(lab, fqdn)[-3000:])
        log = console(lab, fqdn)
        # the first boot installed through the kickstart; the second booted the disk the rewritten config chained to
        assert (log.index("running %pre") < log.index("install finished; rebooting")
                < log.index("lablease.boot=disk")
                < log.index("first boot: lablease-postinstall.service finished with exit status 0")), log
        commands = [(c["action"], c["status"]) for c in reversed(alice.get(f"/systems/{fqdn}/commands").json())]
        assert commands[:3] == [("netboot_install", "completed"), ("reboot", "completed"),
                                ("netboot_local", "completed")], commands
    assert usage(alice, "q1.lab.test")[-3:] == ["waiting", "installing", "running"]
    assert usage(bob, "q2.lab.test")[-4:] == ["scheduled", "waiting", "installing", "running"]
    assert bob.get(f"/recipes/{recipe['id']}").json()["status"] == "running"
    # the config the worker rewrote is the one that reached the disk; returning clears it and powers off
    ipxe = lab.data_dir / "tftpboot" / "ipxe" / "52-54-00-0e-00-01"
    assert "sanboot" in ipxe.read_text()
    assert alice.delete(f"/reservations/{reservation['id']}").status_code == 204
    deadline = time.monotonic() + 30
    while (ipxe.exists() or alice.get("/systems/q1.lab.test").json()["power_state"] != "off") \
            and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not ipxe.exists() and alice.get("/systems/q1.lab.test").json()["power_state"] == "off"
    assert bob.patch(f"/recipes/{recipe['id']}", json={"status": "completed", "result": "pass"}).status_code == 200


def test_a_broken_kickstart_fails_the_install(lab):
    """On the 5-minute watchdog: an emulated VM on busy cores can take more than 30 s to reach its %pre."""
    add_vm(lab, "q3.lab.test", "52:54:00:0e:00:03")
    # q3's kickstart breaks in %post (a site snippet for that system only)
    snippet = lab.data_dir / "kickstarts" / "snippets" / "per_system" / "post_install" / "q3.lab.test"
    snippet.parent.mkdir(parents=True, exist_ok=True)
    snippet.write_text("echo 'this post-install step fails'\nexit 3\n")
    carol = lab.add_user("carol")
    carol.post("/reservations", json={"system": "q3.lab.test", "duration": "1h"}).raise_for_status()
    response = carol.post("/systems/q3.lab.test/provision", json={"distro_tree": "Guest-1"})
    assert response.status_code == 202, response.text
    broken = wait_until_settled(carol, ["q3.lab.test"])["q3.lab.test"]
    assert broken["status"] == "failed" and "install_fail" in broken["error"], broken
    assert broken["installed_at"] is None
    assert "this post-install step fails" in console(lab, "q3.lab.test")


def test_a_stalled_boot_is_aborted_by_the_watchdog(stalling_lab):
    lab = stalling_lab
    add_vm(lab, "q4.lab.test", "52:54:00:0e:00:04")
    dave = lab.add_user("dave")
    dave.post("/reservations", json={"system": "q4.lab.test", "duration": "1h"}).raise_for_status()
    response = dave.post("/systems/q4.lab.test/provision", json={"distro_tree": "Missing-1"})
    assert response.status_code == 202, response.text
    stalled = wait_until_settled(dave, ["q4.lab.test"])["q4.lab.test"]
    # q4's iPXE could not fetch its kernel, fell through to the disk, and nobody called back: the watchdog
    assert stalled["status"] == "failed" and "no progress from the installer for 30s" in stalled["error"], stalled
    assert stalled["started_at"] is None
    assert dave.get("/systems/q4.lab.test").json()["usage"] == "idle"


def test_a_vm_of_an_agent_served_lab_installs_through_its_agent(agent_lab, tmp_path):
    """The same two boots with the lab's agent doing the lab's part: it runs the VM (power), writes its netboot
    files into its own TFTP root, and the VM fetches its kickstart and calls back through the agent only."""
    lab = agent_lab
    lab.admin_cli("lab", "add", AGENT_LAB)
    agent = Agent(lab, tmp_path / "agent", AGENT_LAB, listen=lab.proxy).start()
    try:
        add_vm(lab, "q5.lab.test", "52:54:00:0e:00:05", where=AGENT_LAB, home=agent.home)
        dave = lab.add_user("dave")
        dave.post("/reservations", json={"system": "q5.lab.test", "duration": "1h"}).raise_for_status()
        assert dave.post("/systems/q5.lab.test/provision", json={"distro_tree": "Guest-1"}).status_code == 202
        settled = wait_until_settled(dave, ["q5.lab.test"])["q5.lab.test"]
        log = console(lab, "q5.lab.test", agent.home)
        assert settled["status"] == "running", (settled, log[-3000:], (agent.home / "agent.log").read_text()[-3000:])
        assert (log.index("running %pre") < log.index("install finished; rebooting") < log.index("lablease.boot=disk")
                < log.index("first boot: lablease-postinstall.service finished with exit status 0")), log
        commands = [(c["action"], c["status"]) for c in reversed(dave.get("/systems/q5.lab.test/commands").json())]
        assert commands[:3] == [("netboot_install", "completed"), ("reboot", "completed"),
                                ("netboot_local", "completed")], commands
        assert "sanboot" in (agent.home / "tftp" / "ipxe" / "52-54-00-0e-00-05").read_text()
        assert not (lab.data_dir / "tftpboot" / "ipxe" / "52-54-00-0e-00-05").exists()
        passed = (agent.home / "agent.log").read_text()
        assert f"/api/v1/installations/{settled['id']}/kickstart" in passed
        assert "install_done" in passed and "postinstall_done" in passed
    finally:
        agent.kill9()
        for pid_file in agent.home.glob("qemu/*/pid"):
            try:
                os.killpg(int(pid_file.read_text().split()[0]), signal.SIGKILL)
            except (ValueError, IndexError, ProcessLookupError, PermissionError):
                pass
