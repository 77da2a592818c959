"""The qemu power driver against a real QEMU (software emulation, never KVM), netbooting from an empty TFTP root.

The QEMU tests are skipped when qemu-system-x86_64 is not installed (Debian:
qemu-system-x86). Every QEMU a test starts is killed with its process group
afterwards, found both by its pid file and by its command line.
"""
from __future__ import annotations

import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from lablease.power import PowerError, PowerTarget
from lablease.power.qemu import QemuDriver, find_ovmf
from lablease.power.qmp import Qmp
from lablease.power.registry import check_settings, driver_for

MAC = "52:54:00:12:34:56"
FQDN = "q1.lab.test"
needs_qemu = pytest.mark.skipif(shutil.which("qemu-system-x86_64") is None,
                                reason="qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)")


def qemus_under(path: Path) -> list[int]:
    """Pids of live processes whose command line mentions path."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                argv = (entry / "cmdline").read_bytes().decode(errors="replace")
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if str(path) in argv and state != "Z":
                found.append(int(entry.name))
    return found


@pytest.fixture
def lab(tmp_path):
    """An empty TFTP root and a small blank disk; kills every QEMU a test left behind."""
    (tmp_path / "tftp").mkdir()
    images = tmp_path / "data" / "qemu-images"
    images.mkdir(parents=True)
    with open(images / "disk1.img", "wb") as disk:
        disk.truncate(8 << 20)
    yield tmp_path
    pids = {int(p.read_text()) for p in (tmp_path / "data" / "qemu").glob("*/pid") if p.read_text().strip()}
    for pid in pids | set(qemus_under(tmp_path)):
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def qemu(tmp_path, mac=MAC, timeout=20.0, **settings):
    target = PowerTarget(fqdn=FQDN, settings={"driver": "qemu", **settings}, timeout=timeout,
                         data_dir=tmp_path / "data", scripts_dir=tmp_path / "scripts", tftp_root=tmp_path / "tftp",
                         mac=mac)
    return driver_for(target)


def state(tmp_path) -> Path:
    return tmp_path / "data" / "qemu" / FQDN


def pid_of(tmp_path) -> int:
    return int((state(tmp_path) / "pid").read_text())


def argv_of(pid: int) -> list[str]:
    return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")[:-1]


def gone(pid: int) -> bool:
    """No process is left in pid's process group (soon: the driver's reaper thread collects the exited QEMU)."""
    deadline = time.monotonic() + 2
    while time.monotonic() < deadline:
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.02)
    return False


def eventually(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"still not true after {timeout} s: {predicate.__doc__ or predicate}")
        time.sleep(0.05)


def boots(tmp_path) -> int:
    """How many times the firmware has started, from the guest's serial console."""
    return (state(tmp_path) / "serial.log").read_text(errors="replace").count("SeaBIOS (version")


@needs_qemu
@pytest.mark.timeout(60)
def test_on_netboots_qemu_reboot_resets_it_in_place_and_off_leaves_nothing(lab):
    tmp_path = lab
    driver = qemu(tmp_path, disks=["disk1.img"])
    assert driver.status() == "off"
    driver.act("on")
    assert driver.status() == "on"
    pid = pid_of(tmp_path)
    argv = argv_of(pid)
    line = " ".join(argv)
    assert os.path.basename(argv[0]) == "qemu-system-x86_64"
    assert argv[argv.index("-accel") + 1] == "tcg" and argv[argv.index("-boot") + 1] == "n"
    assert f"mac={MAC}" in line and f"tftp={tmp_path / 'tftp'},bootfile=boot.ipxe" in line
    assert f"file={tmp_path / 'data' / 'qemu-images' / 'disk1.img'},format=raw,if=none,id=disk0" in argv
    # the network card boots first under BIOS and UEFI alike (OVMF ignores -boot n), then the disks in order
    assert f"virtio-net-pci,netdev=n0,mac={MAC},bootindex=0" in argv
    assert "virtio-blk-pci,drive=disk0,bootindex=1" in argv
    assert "-no-reboot" not in argv and "kvm" not in line
    assert (state(tmp_path) / "serial.log").exists()
    eventually(lambda: boots(tmp_path) == 1)

    driver.act("reboot")
    eventually(lambda: boots(tmp_path) == 2)  # the guest's console: the firmware started again, appended
    assert pid_of(tmp_path) == pid and driver.status() == "on"

    driver.act("off")
    assert driver.status() == "off" and gone(pid)
    assert not (state(tmp_path) / "pid").exists() and qemus_under(tmp_path) == []
    driver.act("off")  # off when off is fine
    assert driver.status() == "off"


@needs_qemu
@pytest.mark.timeout(60)
def test_interrupt_injects_an_nmi_into_the_running_machine_and_is_refused_when_it_is_off(lab):
    """QMP inject-nmi: QEMU takes it and the machine runs on (its firmware ignores an NMI; a kernel set to
    panic on one would dump its core). A machine that is off has nothing to interrupt: a PowerError."""
    tmp_path = lab
    driver = qemu(tmp_path)
    with pytest.raises(PowerError, match=f"QEMU machine {FQDN} is off: there is nothing to interrupt"):
        driver.act("interrupt")
    assert qemus_under(tmp_path) == []  # an interrupt never powers a machine on
    driver.act("on")
    pid = pid_of(tmp_path)
    driver.act("interrupt")
    assert driver.status() == "on" and pid_of(tmp_path) == pid
    with Qmp(state(tmp_path) / "qmp.sock") as session:
        assert session.execute("query-status")["status"] == "running"
    driver.act("off")
    assert gone(pid)


@needs_qemu
@pytest.mark.timeout(60)
def test_on_twice_starts_one_qemu_and_reboot_when_off_powers_on(lab):
    tmp_path = lab
    driver = qemu(tmp_path, memory=256, cpus=2, nic="e1000")
    driver.act("reboot")
    pid = pid_of(tmp_path)
    assert driver.status() == "on"
    driver.act("on")
    qemu(tmp_path, memory=256, cpus=2, nic="e1000").act("on")  # another worker's driver for the same system
    assert pid_of(tmp_path) == pid and qemus_under(tmp_path) == [pid]
    argv = argv_of(pid)
    assert argv[argv.index("-m") + 1] == "256" and argv[argv.index("-smp") + 1] == "2"
    assert f"e1000,netdev=n0,mac={MAC},bootindex=0" in argv
    driver.act("off")
    assert gone(pid)


@needs_qemu
@pytest.mark.timeout(60)
def test_a_guest_that_powers_itself_off_reads_as_off_and_on_starts_it_again(lab):
    tmp_path = lab
    driver = qemu(tmp_path)
    driver.act("on")
    first = pid_of(tmp_path)
    with Qmp(state(tmp_path) / "qmp.sock") as session:  # what the guest's poweroff does: QEMU exits
        session.execute("quit")
    eventually(lambda: driver.status() == "off")
    driver.act("on")
    second = pid_of(tmp_path)
    assert second != first and driver.status() == "on"
    driver.act("off")
    assert gone(second)


@needs_qemu
def test_a_stale_pid_file_naming_another_process_is_off(lab):
    tmp_path = lab
    state(tmp_path).mkdir(parents=True)
    (state(tmp_path) / "pid").write_text(f"{os.getpid()}\n")
    driver = qemu(tmp_path)
    assert driver.status() == "off"
    driver.act("off")  # must not kill the stranger (this test process)
    assert not (state(tmp_path) / "pid").exists()


@needs_qemu
@pytest.mark.timeout(60)
def test_qemu_that_cannot_start_is_a_power_error_with_its_reason(lab):
    tmp_path = lab
    with pytest.raises(PowerError, match=r"QEMU for q1.lab.test exited: .*missing\.img.*No such file or directory"):
        qemu(tmp_path, disks=["disk1.img", "missing.img"]).act("on")
    assert qemus_under(tmp_path) == [] and not (state(tmp_path) / "pid").exists()
    assert qemu(tmp_path).status() == "off"


@needs_qemu
def test_a_machine_without_a_mac_cannot_netboot(lab):
    with pytest.raises(PowerError, match=r"q1.lab.test has no MAC address"):
        qemu(lab, mac=None).act("on")
    assert qemus_under(lab) == []


def test_a_missing_binary_is_a_clear_power_error(tmp_path):
    (tmp_path / "tftp").mkdir()
    with pytest.raises(PowerError, match=r"qemu-system-nosuch is not installed"):
        qemu(tmp_path, binary="qemu-system-nosuch").act("on")


def test_settings_edited_past_check_are_refused_at_start_too(tmp_path):
    with pytest.raises(PowerError, match=r"q1.lab.test: qemu disk '../../etc/shadow' must be the plain name"):
        qemu(tmp_path, disks=["../../etc/shadow"]).act("on")


@needs_qemu
@pytest.mark.timeout(60)
def test_uefi_boots_ovmf_with_a_vars_store_of_its_own(lab):
    try:
        code, template = find_ovmf()
    except PowerError:
        pytest.skip("OVMF is not installed")
    tmp_path = lab
    driver = qemu(tmp_path, firmware="uefi")
    driver.act("on")
    pid = pid_of(tmp_path)
    argv = argv_of(pid)
    assert f"if=pflash,format=raw,unit=0,readonly=on,file={code}" in argv
    assert f"if=pflash,format=raw,unit=1,file={state(tmp_path) / 'vars.fd'}" in argv
    assert (state(tmp_path) / "vars.fd").read_bytes() == template.read_bytes()
    assert driver.status() == "on"
    driver.act("off")
    assert gone(pid) and (state(tmp_path) / "vars.fd").exists()  # kept, like a board's NVRAM


@pytest.mark.parametrize("settings", [
    {},
    {"memory": 1024, "cpus": 2, "nic": "e1000", "firmware": "uefi", "bootfile": "grub/i386-pc/core.0",
     "disks": ["root.img", "data-2.raw"], "accel": "kvm", "binary": "/usr/local/bin/qemu-system-x86_64"},
    {"memory": "512", "cpus": "1", "disks": []},
])
def test_check_accepts(settings):
    check_settings({"driver": "qemu", **settings})


@pytest.mark.parametrize("settings, message", [
    ({"disks": ["../root.img"]}, "plain name"),
    ({"disks": ["images/root.img"]}, "plain name"),
    ({"disks": ["/etc/shadow"]}, "plain name"),
    ({"disks": [".."]}, "plain name"),
    ({"disks": ["a..b"]}, "plain name"),
    ({"disks": ["root.img,file.driver=ssh"]}, "plain name"),
    ({"disks": ["root.img", "root.img"]}, "twice"),
    ({"disks": "root.img"}, "list of image names"),
    ({"memory": "lots"}, "memory must be a whole number MiB"),
    ({"memory": 0}, "memory must be between"),
    ({"cpus": 1.5}, "cpus must be a whole number"),
    ({"nic": "ne2k_pci"}, "nic must be one of virtio-net-pci, e1000"),
    ({"firmware": "coreboot"}, "firmware must be one of bios, uefi"),
    ({"accel": "hvf"}, "accel must be one of tcg, kvm"),
    ({"bootfile": "../boot.ipxe"}, "bootfile must be a relative path"),
    ({"bootfile": "/boot.ipxe"}, "bootfile must be a relative path"),
    ({"bootfile": "boot.ipxe,guestfwd=tcp:10.0.2.9:1-cmd:sh"}, "bootfile must be a relative path"),
    ({"binary": "/bin/sh"}, "binary must be a QEMU system emulator"),
    ({"binary": "bin/qemu-system-x86_64"}, "binary must be a QEMU system emulator"),
    ({"disk": ["root.img"]}, "unknown qemu power setting(s) disk"),
])
def test_check_refuses(settings, message):
    with pytest.raises(ValueError) as error:
        QemuDriver.check({"driver": "qemu", **settings})
    assert message in str(error.value)
