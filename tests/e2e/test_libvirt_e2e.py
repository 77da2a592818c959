"""A VM of a real libvirtd, powered through a real BMC emulator, netboots lablease's config and installs.

The VM is a libvirt domain (QEMU under TCG) on QEMU's user network, as in test_qemu_e2e.py (same guest, same
server and lab, whose VMs reach it at 10.0.2.2). Its BMC is sushy-tools' sushy-emulator with its libvirt
backend, over HTTPS with a test CA and basic auth: lablease's worker powers it with the `redfish` driver
for the install, then with the `libvirt` driver (virsh) off. libvirtd's system instance is used, started
here when it is not running (root only: skipped otherwise, failed under CI).
"""
from __future__ import annotations

import os
import time

import pytest

from tests.support import bmc as emulators

from .test_qemu_e2e import guest, lab, wait_until_settled  # noqa: F401 (guest and lab are fixtures)

pytestmark = pytest.mark.timeout(400)

FQDN = "l1.lab.test"
MAC = "52:54:00:0e:01:01"


@pytest.fixture(scope="module")
def libvirtd(tmp_path_factory):
    reason = emulators.missing_libvirt()
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"{reason}: `make test` installs it (scripts/ensure-bmc.sh)")
        pytest.skip(reason)
    with emulators.Libvirtd(tmp_path_factory.mktemp("libvirtd")) as daemon:
        yield daemon


@pytest.fixture(scope="module")
def vm(libvirtd, lab, tmp_path_factory):
    directory = tmp_path_factory.mktemp("libvirt-vm")
    disks = lab.guest.make_disks(directory / "disks")
    name = f"lablease-test-{os.getpid()}-l1"
    with emulators.LibvirtDomain(name, MAC, lab.data_dir / "tftpboot", disks, directory / "serial.log") as domain:
        with emulators.RedfishEmulator(directory / "redfish", domains=[domain.uuid]) as redfish:
            domain.redfish = redfish
            yield domain


def wait_for_command(api, command_id: int, timeout: float = 60.0) -> dict:
    deadline = time.monotonic() + timeout
    while (command := api.get(f"/commands/{command_id}").json())["status"] in ("queued", "running"):
        assert time.monotonic() < deadline, command
        time.sleep(0.5)
    return command


def test_a_libvirt_vm_powered_through_its_redfish_bmc_netboots_installs_and_is_powered_off_by_virsh(lab, vm):
    redfish = {"driver": "redfish", "url": vm.redfish.url, "id": vm.uuid, "verify": str(vm.redfish.ca),
               "user": emulators.USER, "password": emulators.PASSWORD}
    response = lab.admin.post("/systems", json={"fqdn": FQDN, "arch": "x86_64", "lab": "qemu", "condition": "manual",
                                                "power": redfish, "netboot": {"mac": MAC}})
    assert response.status_code == 201, response.text
    assert vm.state() == "shut off"
    dave = lab.add_user("dave")
    reservation = dave.post("/reservations", json={"system": FQDN, "duration": "1h"}).json()
    assert dave.post(f"/systems/{FQDN}/provision", json={"distro_tree": "Guest-1"}).status_code == 202

    installation = wait_until_settled(dave, [FQDN])[FQDN]
    log = vm.console.read_text(errors="replace")
    assert installation["status"] == "running", (installation, log[-3000:])
    # the first boot installed through the kickstart; the second booted the disk the rewritten config chained to
    assert (log.index("running %pre") < log.index("install finished; rebooting") < log.index("lablease.boot=disk")
            < log.index("first boot: lablease-postinstall.service finished with exit status 0")), log
    commands = [(c["action"], c["status"]) for c in reversed(dave.get(f"/systems/{FQDN}/commands").json())]
    assert commands[:3] == [("netboot_install", "completed"), ("reboot", "completed"),
                            ("netboot_local", "completed")], commands
    assert vm.state() == "running" and vm.redfish.power_state(vm.uuid) == "On"

    # The same VM through the libvirt driver: virsh destroys it, the worker reads its state back.
    response = lab.admin.patch(f"/systems/{FQDN}", json={"power": {"driver": "libvirt", "address": vm.name}})
    assert response.status_code == 200, response.text
    command = dave.post(f"/systems/{FQDN}/power", json={"action": "off"}).json()
    assert wait_for_command(dave, command["id"])["status"] == "completed"
    assert dave.get(f"/systems/{FQDN}").json()["power_state"] == "off"
    assert vm.state() == "shut off" and vm.redfish.power_state(vm.uuid) == "Off"
    assert dave.delete(f"/reservations/{reservation['id']}").status_code == 204
