"""Real netboot through the other boot loaders lablease writes configs for (optional: `-m netboot_extra`).

    .venv/bin/pytest tests/e2e/test_qemu_extra.py -m netboot_extra

test_qemu_e2e.py proves the default path (SeaBIOS, QEMU's iPXE ROM, boot.ipxe). These cases boot the
same guest (tests/support/guest.py) through the other loaders, each on a `qemu` system of a real server
whose lab `qemu` the VMs reach at 10.0.2.2, from a reservation and a provision through the installer's real
callbacks:

- PXELINUX (BIOS): DHCP offers lpxelinux.0 (the PXELINUX with an HTTP client: the config's kernel and
  initrd are URLs), copied with its .c32 modules from Debian's pxelinux and syslinux-common into the lab's
  TFTP root; it reads pxelinux.cfg/01-<mac>. Second boot: the rewritten config's `COM32 chain.c32` boots
  the disk's syslinux.
- GRUB2 (BIOS): grub-mknetdir (Debian's grub-pc-bin) fills the TFTP root's boot/grub; DHCP offers its
  core image, which reads boot/grub/grub.cfg-01-<mac>. Second boot: the rewritten `chainloader +1`.
  The install config names the kernel `(http,10.0.2.2:PORT)/...`: GRUB 2.06 reads everything after the
  device's first comma as the host, so the older `(http,10.0.2.2,PORT)` form never loaded it (a bug this case
  now fails on, as on any other).
- UEFI (OVMF) with iPXE: the iPXE script's `initrd=initrd` lets the kernel's EFI stub find its initrd.
  Why the second boot is not checked: its local-boot form `sanboot --drive 0x80 || exit` has no BIOS drive
  under UEFI and exits to the firmware's next boot options (its own PXE, HTTP boot), and the guest's boot
  disk is BIOS-only (syslinux in a FAT boot sector, no EFI loader), so nothing boots the installed system.
  (An EFI loader on that disk would not help as things are: the qemu driver passes `-boot n`, which OVMF
  does not honour - it tries the disks before the NIC - so such a disk would be booted instead of the
  installer.) This case checks the install boot, install_done, the rewritten script and that the second
  boot reached it.

Only the systems' netboot `loaders` setting narrows what the worker writes to the loader under test, so
the boot can only have come through that loader's file. The packages are optional: the module runs
`scripts/ensure-qemu.sh --extra` (it installs them when it can) and skips a case whose loader is still
missing, saying which package it needs.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from tests.support.guest import GuestFiles, build_guest
from tests.support.live import LiveServer

pytestmark = [pytest.mark.netboot_extra, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]
LAB = "qemu"
PXELINUX = Path("/usr/lib/PXELINUX/lpxelinux.0")
SYSLINUX_MODULES = Path("/usr/lib/syslinux/modules/bios")
# ldlinux.c32 is PXELINUX's own core; chain.c32 (local boot) needs libcom32 and libutil
PXELINUX_MODULES = ("ldlinux.c32", "libcom32.c32", "libutil.c32", "chain.c32")
GRUB_PC = Path("/usr/lib/grub/i386-pc")
GRUB_CORE = "boot/grub/i386-pc/core.0"  # grub-mknetdir --subdir=boot/grub: lablease's GRUB config prefix
SETTLED = ("running", "failed", "cancelled", "completed")
# what loaders and firmware print when a boot is dead: fail at once instead of waiting for the watchdog
DEAD_BOOT = ("Failed to boot both default and fallback entries", "you need to load the kernel first",
             "Could not find kernel image", "No bootable device")


def _ensure_packages() -> str:
    """Run scripts/ensure-qemu.sh --extra; what it said when it could not install (the cases skip)."""
    result = subprocess.run([str(REPO / "scripts" / "ensure-qemu.sh"), "--extra"], capture_output=True, text=True,
                            timeout=600)
    return "" if result.returncode == 0 else (result.stderr or result.stdout).strip()


def _ovmf_missing() -> str:
    from lablease.power import PowerError
    from lablease.power.qemu import find_ovmf
    try:
        find_ovmf()
    except PowerError as error:
        return str(error)
    return ""


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A real server (SQLite) whose lab `qemu` is reached by VMs at 10.0.2.2; the loaders that are installed
    copied into the lab's TFTP root (data_dir/tftpboot); the guest as distro tree Guest-1."""
    problem = _ensure_packages()
    if shutil.which("qemu-system-x86_64") is None:
        pytest.skip(f"QEMU is not installed: scripts/ensure-qemu.sh --extra failed: {problem}")
    guest = build_guest()
    server = LiveServer(tmp_path_factory.mktemp("qemu-extra") / "data",
                        settings={"install_timeout": "60s", "command_retry_delay": "1s"})
    server.env["LABLEASE_LABS"] = json.dumps({LAB: {"install_url": f"http://10.0.2.2:{server.port}"}})
    tftp_root = server.data_dir / "tftpboot"
    server.missing = {}
    tftp_root.mkdir(parents=True)
    if PXELINUX.is_file() and all((SYSLINUX_MODULES / name).is_file() for name in PXELINUX_MODULES):
        for source in (PXELINUX, *(SYSLINUX_MODULES / name for name in PXELINUX_MODULES)):
            shutil.copyfile(source, tftp_root / source.name)
    else:
        server.missing["pxelinux"] = f"no {PXELINUX} or its modules in {SYSLINUX_MODULES} (Debian: pxelinux, " \
                                     f"syslinux-common; scripts/ensure-qemu.sh --extra: {problem or 'ran'})"
    if shutil.which("grub-mknetdir") and (GRUB_PC / "modinfo.sh").is_file():
        made = subprocess.run(["grub-mknetdir", f"--net-directory={tftp_root}", "--subdir=boot/grub",
                               "-d", str(GRUB_PC)], capture_output=True, text=True, timeout=120)
        assert made.returncode == 0 and (tftp_root / GRUB_CORE).is_file(), made.stderr
    else:
        server.missing["grub2"] = f"no grub-mknetdir or {GRUB_PC} (Debian: grub-pc-bin; " \
                                  f"scripts/ensure-qemu.sh --extra: {problem or 'ran'})"
    if _ovmf_missing():
        server.missing["uefi"] = _ovmf_missing()
    files = GuestFiles(guest)
    try:
        server.start()
        server.guest, server.files = guest, files
        tree = {"name": "Guest-1", "family": "Guest1", "arch": "x86_64", "url": files.url(), "kernel": "vmlinuz",
                "initrd": "initramfs.gz", "kernel_options": "console=ttyS0", "labs": [LAB]}
        response = server.admin.post("/distro-trees", json=tree)
        assert response.status_code == 201, response.text
        server.alice = server.add_user("alice")
        yield server
    finally:
        server.stop()
        files.close()


def need(lab, case: str) -> None:
    if case in lab.missing:
        pytest.skip(f"{case}: {lab.missing[case]}")


def add_vm(lab, fqdn: str, mac: str, loaders: list[str], **power) -> None:
    images = lab.data_dir / "qemu-images"
    images.mkdir(exist_ok=True)
    names = []
    for disk in lab.guest.make_disks(lab.data_dir / "vm-disks" / fqdn):
        name = f"{fqdn}-{disk.name}"
        shutil.move(disk, images / name)
        names.append(name)
    response = lab.admin.post("/systems", json={
        "fqdn": fqdn, "arch": "x86_64", "lab": LAB, "condition": "manual",
        "power": {"driver": "qemu", "memory": 512, "disks": names, **power},
        "netboot": {"mac": mac, "loaders": loaders}})
    assert response.status_code == 201, response.text


def installation_of(api, fqdn):
    system = api.get(f"/systems/{fqdn}").json()
    return api.get(f"/installations/{system['installation']['id']}").json() if system["installation"] else None


def commands(api, fqdn) -> list[tuple[str, str]]:
    return [(c["action"], c["status"]) for c in reversed(api.get(f"/systems/{fqdn}/commands").json())]


def console(lab, fqdn) -> str:
    path = lab.data_dir / "qemu" / fqdn / "serial.log"
    return path.read_text(errors="replace") if path.exists() else ""


def provision(lab, fqdn: str) -> dict:
    """Reserve fqdn as alice and install Guest-1 on it; the reservation."""
    reservation = lab.alice.post("/reservations", json={"system": fqdn, "duration": "1h"})
    assert reservation.status_code == 201, reservation.text
    response = lab.alice.post(f"/systems/{fqdn}/provision", json={"distro_tree": "Guest-1"})
    assert response.status_code == 202, response.text
    return reservation.json()


def wait_for(lab, fqdn: str, done, what: str, timeout: float = 180.0) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = installation_of(lab.alice, fqdn)
        if found and (done(found) or found["status"] in SETTLED):
            return found
        log = console(lab, fqdn)
        dead = [line for line in DEAD_BOOT if line in log]
        if dead:
            raise AssertionError(f"{fqdn}: the boot died ({dead[0]!r}) before {what}: {found}, commands "
                                 f"{commands(lab.alice, fqdn)}\n{log[-3000:]}")
        time.sleep(1)
    raise AssertionError(f"{fqdn}: no {what} within {timeout:g} s: {installation_of(lab.alice, fqdn)}, "
                         f"commands {commands(lab.alice, fqdn)}\n{console(lab, fqdn)[-3000:]}")


def missing_marks(log: str, marks) -> str:
    """'' when the console shows every mark, in this order; else what is missing, and the console after it."""
    at = 0
    for mark in marks:
        found_at = log.find(mark, at)
        if found_at < 0:
            return f"{mark!r} not on the console after offset {at}:\n{log[at:][-4000:]}"
        at = found_at + len(mark)
    return ""


def return_and_check_cleared(lab, fqdn: str, reservation: dict, config: Path) -> None:
    assert lab.alice.delete(f"/reservations/{reservation['id']}").status_code == 204
    deadline = time.monotonic() + 30
    while (config.exists() or lab.alice.get(f"/systems/{fqdn}").json()["power_state"] != "off") \
            and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not config.exists() and lab.alice.get(f"/systems/{fqdn}").json()["power_state"] == "off"


def two_boots(lab, fqdn: str, mac: str, loader: str, bootfile: str, install_marks: tuple[str, ...],
              local_marks: tuple[str, ...], local_line: str) -> None:
    """Install through `loader` and boot the installed disk through the config the worker rewrote."""
    add_vm(lab, fqdn, mac, [loader], bootfile=bootfile)
    config = lab.data_dir / "tftpboot" / {"pxelinux": "pxelinux.cfg", "grub2": "boot/grub"}[loader] / \
        (("" if loader == "pxelinux" else "grub.cfg-") + "01-" + mac.replace(":", "-"))
    reservation = provision(lab, fqdn)
    started = time.monotonic()
    found = wait_for(lab, fqdn, lambda found: found["status"] == "running", "running system")
    took = time.monotonic() - started
    log = console(lab, fqdn)
    assert found["status"] == "running", (found, log[-3000:])
    # the install boot came through this loader (there is no iPXE file for this MAC), the second boot through
    # the rewritten config to the disk's syslinux, whose first boot called postinstall_done
    assert not (lab.data_dir / "tftpboot" / "ipxe" / mac.replace(":", "-")).exists()
    marks = (f"Filename: {bootfile}", *install_marks, "lablease-guest: running %pre",
             "lablease-guest: install finished; rebooting", f"Filename: {bootfile}", *local_marks,
             "SYSLINUX 6.04", "lablease.boot=disk",
             "lablease-guest: first boot: lablease-postinstall.service finished with exit status 0")
    missing = missing_marks(log, marks)
    assert not missing, missing
    assert commands(lab.alice, fqdn)[:3] == [("netboot_install", "completed"), ("reboot", "completed"),
                                             ("netboot_local", "completed")]
    assert local_line in config.read_text(), config.read_text()
    print(f"{loader}: two-boot install {took:.1f} s")
    return_and_check_cleared(lab, fqdn, reservation, config)


def test_pxelinux_installs_and_chains_to_the_disk(lab):
    need(lab, "pxelinux")
    two_boots(lab, "px1.lab.test", "52:54:00:0e:10:01", "pxelinux", "lpxelinux.0",
              install_marks=("PXELINUX 6.04 lwIP", f"Loading http://10.0.2.2:{lab.files.port}/vmlinuz... ok"),
              local_marks=("PXELINUX 6.04 lwIP", "Booting..."), local_line="COM32 chain.c32")


def test_grub2_bios_installs_and_chains_to_the_disk(lab):
    need(lab, "grub2")
    two_boots(lab, "gr1.lab.test", "52:54:00:0e:10:02", "grub2", GRUB_CORE,
              install_marks=("Welcome to GRUB!", "Booting `install'", "Linux version"),
              local_marks=("Welcome to GRUB!", "Booting `local disk'"), local_line="chainloader +1")


def test_uefi_ipxe_installs_with_the_named_initrd(lab):
    need(lab, "uefi")
    fqdn, mac = "ue1.lab.test", "52:54:00:0e:10:03"
    add_vm(lab, fqdn, mac, ["ipxe"], firmware="uefi")
    config = lab.data_dir / "tftpboot" / "ipxe" / mac.replace(":", "-")
    reservation = provision(lab, fqdn)
    started = time.monotonic()
    found = wait_for(lab, fqdn, lambda found: found["installed_at"] is not None
                     and ("netboot_local", "completed") in commands(lab.alice, fqdn), "install_done")
    took = time.monotonic() - started
    assert found["status"] in ("installed", "running"), (found, console(lab, fqdn)[-3000:])
    assert "sanboot --no-describe --drive 0x80 || exit" in config.read_text()
    # OVMF ran iPXE (the EFI build in QEMU's NIC ROM), which booted the kernel through its EFI stub; the stub
    # found its initrd by the name initrd=initrd gives. Then the second boot read the rewritten script, whose
    # sanboot has no BIOS drive 0x80 to boot under UEFI, so `|| exit` hands back to the firmware. That is where
    # this case stops: the guest's boot disk is BIOS-only (syslinux, no EFI loader), so the firmware's other
    # boot options (its own PXE and HTTP boot) find nothing to boot and the installed system never starts.
    marks = ("Filename: boot.ipxe", f"ipxe/{mac.replace(':', '-')}... ok", "EFI stub: Loaded initrd",
             "Command line: vmlinuz initrd=initrd console=ttyS0 inst.ks=", "lablease-guest: running %pre",
             "lablease-guest: install finished; rebooting", f"ipxe/{mac.replace(':', '-')}... ok",
             "Boot from SAN device 0x80 failed")
    deadline = time.monotonic() + 60
    while True:  # the reboot comes after install_done
        missing = missing_marks(console(lab, fqdn), marks)
        if not missing or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert not missing, missing
    print(f"uefi: install boot to install_done {took:.1f} s")
    return_and_check_cleared(lab, fqdn, reservation, config)
