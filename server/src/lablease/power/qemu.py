"""The `qemu` driver: a real QEMU virtual machine that netboots from the lab's TFTP root.

QEMU's user-mode network answers the guest's DHCP with `bootfile` and serves
the lab's TFTP root read-only, so the machine walks the same netboot path as
real hardware (the guest reaches the host as 10.0.2.2). It boots from the
network first on every boot: after an install the server rewrites the
machine's netboot config to chain to the local disk.

Power settings (all optional but `driver`):
  memory   MiB, default 512          cpus     default 1
  nic      virtio-net-pci (default), e1000, e1000e or rtl8139
  firmware bios (default, SeaBIOS) or uefi (OVMF; a writable vars.fd per machine)
  bootfile the file DHCP offers, relative to the TFTP root, default boot.ipxe
  disks    raw image names in data_dir/qemu-images, attached in order as vda, vdb, ...
  accel    tcg (default) or kvm     binary   default qemu-system-x86_64

Each machine keeps data_dir/qemu/<fqdn>/: pid, qmp.sock, serial.log (the
guest's console, appended across boots), qemu.log (QEMU's own output, from its
latest start) and vars.fd (UEFI). QEMU runs in a session of its own, so it
outlives the worker like a real machine and is killed as a process group.
Nothing in the settings can make QEMU open a host file outside the images
directory or add options of its own: names are plain, option values are checked.
"""
from __future__ import annotations

import os
import re
import shutil
import signal
import time
from pathlib import Path

from . import PowerDriver, PowerError, machines
from ..provision.netboot import normalise_mac
from .qmp import Qmp, QmpError

KEYS = ("driver", "memory", "cpus", "nic", "firmware", "bootfile", "disks", "accel", "binary")
NICS = ("virtio-net-pci", "e1000", "e1000e", "rtl8139")
FIRMWARES = ("bios", "uefi")
ACCELS = ("tcg", "kvm")
DEFAULT_BINARY = "qemu-system-x86_64"
MEMORY_RANGE = (64, 1024 * 1024)  # MiB
CPUS_RANGE = (1, 64)
MAX_DISKS = 16

IMAGE_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
BOOTFILE_PART = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")
BINARY_NAME = re.compile(r"qemu-system-[A-Za-z0-9_]+")

# OVMF code images and the vars template that matches each, looked for in this order.
OVMF_DIRS = ("/usr/share/OVMF", "/usr/share/qemu", "/usr/share/ovmf", "/usr/share/edk2/ovmf",
             "/usr/share/edk2-ovmf/x64")
OVMF_PAIRS = (("OVMF_CODE_4M.fd", "OVMF_VARS_4M.fd"), ("OVMF_CODE.fd", "OVMF_VARS.fd"))

UNIX_PATH_MAX = 107  # bytes of a unix socket path, without its terminating NUL
QMP_TIMEOUT = 5.0  # seconds one QMP session may take
QUIT_GRACE = 5.0  # seconds QEMU has to exit after `quit` before its group is killed
KILL_GRACE = 5.0
TAIL_LINES = 5
OFF_STATUSES = {"shutdown", "guest-panicked"}  # QEMU is there, the guest is not (as libvirt's shut off/crashed)
EXIT_GRACE = 2.0  # seconds a QEMU whose QMP socket failed has to turn out to be exiting


def _integer(settings: dict, key: str, default: int, bounds: tuple[int, int], unit: str = "") -> int:
    value = settings.get(key)
    if value in (None, ""):
        return default
    try:
        number = int(value)
        if isinstance(value, bool) or (isinstance(value, float) and value != number):
            raise ValueError
    except (TypeError, ValueError):
        raise ValueError(f"qemu power setting {key} must be a whole number{unit}, not {value!r}") from None
    low, high = bounds
    if not low <= number <= high:
        raise ValueError(f"qemu power setting {key} must be between {low} and {high}{unit}")
    return number


def _choice(settings: dict, key: str, choices: tuple[str, ...]) -> str:
    value = settings.get(key)
    if value in (None, ""):
        return choices[0]
    if value not in choices:
        raise ValueError(f"qemu power setting {key} must be one of {', '.join(choices)}, not {value!r}")
    return value


def _disks(settings: dict) -> list[str]:
    disks = settings.get("disks")
    if disks in (None, ""):
        return []
    if not isinstance(disks, list) or not all(isinstance(name, str) for name in disks):
        raise ValueError("qemu power setting disks must be a list of image names")
    if len(disks) > MAX_DISKS:
        raise ValueError(f"qemu power setting disks may name at most {MAX_DISKS} images")
    for name in disks:
        if not IMAGE_NAME.fullmatch(name) or ".." in name:
            raise ValueError(f"qemu disk {name!r} must be the plain name of an image in the qemu-images directory "
                             "(letters, digits, . _ + -; no / and no ..)")
    if len(set(disks)) != len(disks):
        raise ValueError("qemu power setting disks names an image twice")
    return disks


def _bootfile(settings: dict) -> str:
    value = settings.get("bootfile")
    if value in (None, ""):
        return "boot.ipxe"
    parts = value.split("/") if isinstance(value, str) else [None]
    if not all(part and BOOTFILE_PART.fullmatch(part) and part != ".." for part in parts) or len(value) > 128:
        raise ValueError(f"qemu power setting bootfile must be a relative path in the TFTP root "
                         f"(letters, digits, . _ + - and /; no ..), not {value!r}")
    return value


def _binary(settings: dict) -> str:
    value = settings.get("binary")
    if value in (None, ""):
        return DEFAULT_BINARY
    name = os.path.basename(value) if isinstance(value, str) else ""
    if not BINARY_NAME.fullmatch(name) or (value != name and not os.path.isabs(value)):
        raise ValueError(f"qemu power setting binary must be a QEMU system emulator (qemu-system-<arch>, "
                         f"a name on PATH or an absolute path), not {value!r}")
    return value


def _options(settings: dict) -> dict:
    unknown = sorted(set(settings) - set(KEYS))
    if unknown:
        raise ValueError(f"unknown qemu power setting(s) {', '.join(map(str, unknown))} (known: {', '.join(KEYS)})")
    return {
        "memory": _integer(settings, "memory", 512, MEMORY_RANGE, " MiB"),
        "cpus": _integer(settings, "cpus", 1, CPUS_RANGE),
        "nic": _choice(settings, "nic", NICS),
        "firmware": _choice(settings, "firmware", FIRMWARES),
        "bootfile": _bootfile(settings),
        "disks": _disks(settings),
        "accel": _choice(settings, "accel", ACCELS),
        "binary": _binary(settings),
    }


def _opt(value) -> str:
    """A value inside a QEMU option string: a comma would start another option, so it is doubled."""
    return str(value).replace(",", ",,")


def find_ovmf() -> tuple[Path, Path]:
    """(OVMF code, its vars template); PowerError naming where it looked when there is none."""
    for directory in OVMF_DIRS:
        for code, template in OVMF_PAIRS:
            if (Path(directory) / code).is_file() and (Path(directory) / template).is_file():
                return Path(directory) / code, Path(directory) / template
    raise PowerError(f"firmware uefi needs OVMF (OVMF_CODE.fd with its OVMF_VARS.fd) in one of {', '.join(OVMF_DIRS)};"
                     " install it (Debian: apt-get install ovmf)")


def _tail(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").strip().splitlines()
    except OSError:
        lines = []
    return " | ".join(lines[-TAIL_LINES:]) or "no output"


class QemuDriver(PowerDriver):
    name = "qemu"
    interrupts = True

    @classmethod
    def check(cls, settings: dict) -> None:
        super().check(settings)
        _options(settings)

    @property
    def state_dir(self) -> Path:
        return machines.state_dir(self.target.data_dir, "qemu", self.target.fqdn, "QEMU machine")

    @property
    def images_dir(self) -> Path:
        return (Path(self.target.data_dir) / "qemu-images").absolute()

    @property
    def socket_path(self) -> Path:
        return self.state_dir / "qmp.sock"

    def _qmp_arg(self) -> str:
        return f"unix:{_opt(self.socket_path)},server=on,wait=off"

    def _ours(self, pid: int) -> bool:
        """pid is a QEMU serving this machine's QMP socket, not a stranger that reused the pid."""
        argv = machines.cmdline(pid)
        return (bool(argv) and os.path.basename(argv[0]).startswith("qemu-system") and self._qmp_arg() in argv
                and machines.exists(pid))

    def _pid(self) -> int | None:
        pid = machines.read_pid(self.state_dir / "pid")
        return pid if pid is not None and self._ours(pid) else None

    def _exiting(self, pid: int) -> bool:
        """After a failed QMP session: QEMU was on its way out (the guest powered off), not hung."""
        return machines.wait_gone(pid, EXIT_GRACE)

    def _qmp(self) -> Qmp:
        return Qmp(self.socket_path, min(QMP_TIMEOUT, max(self.target.timeout, 1.0)))

    def argv(self) -> list[str]:
        """QEMU's command line for this machine (settings checked again: they may predate a check)."""
        try:
            options = _options(self.settings)
        except ValueError as error:
            raise PowerError(f"{self.target.fqdn}: {error}") from None
        if not (self.target.mac or "").strip():
            raise PowerError(f"{self.target.fqdn} has no MAC address: a QEMU machine netboots with the system's MAC")
        try:
            mac = normalise_mac(self.target.mac)
        except ValueError as error:
            raise PowerError(f"{self.target.fqdn}: {error}") from None
        binary = shutil.which(options["binary"])
        if binary is None:
            raise PowerError(f"{options['binary']} is not installed (Debian: apt-get install qemu-system-x86)")
        if len(str(self.socket_path).encode()) > UNIX_PATH_MAX:
            raise PowerError(f"{self.socket_path} is too long for a unix socket ({UNIX_PATH_MAX} bytes at most): "
                             "use a shorter data directory")
        tftp_root = Path(self.target.tftp_root).absolute()
        state = self.state_dir
        argv = [binary, "-name", _opt(self.target.fqdn), "-nodefaults", "-nographic",
                "-accel", options["accel"], "-m", str(options["memory"]), "-smp", str(options["cpus"]),
                "-chardev", f"file,id=s0,path={_opt(state / 'serial.log')},append=on", "-serial", "chardev:s0",
                "-qmp", self._qmp_arg(),
                "-netdev", f"user,id=n0,tftp={_opt(tftp_root)},bootfile={options['bootfile']}",
                # bootindex: UEFI firmware ignores -boot n and would try the disks first
                "-device", f"{options['nic']},netdev=n0,mac={mac},bootindex=0", "-boot", "n"]
        if options["firmware"] == "uefi":
            code, _ = find_ovmf()
            argv += ["-drive", f"if=pflash,format=raw,unit=0,readonly=on,file={_opt(code)}",
                     "-drive", f"if=pflash,format=raw,unit=1,file={_opt(state / 'vars.fd')}"]
        for index, name in enumerate(options["disks"]):
            argv += ["-drive", f"file={_opt(self.images_dir / name)},format=raw,if=none,id=disk{index}",
                     "-device", f"virtio-blk-pci,drive=disk{index},bootindex={index + 1}"]
        return argv

    def _uefi_vars(self) -> None:
        """The machine's own copy of the UEFI variable store, kept across boots like a real board's NVRAM."""
        _, template = find_ovmf()
        store = self.state_dir / "vars.fd"
        if not store.is_file() or store.stat().st_size != template.stat().st_size:
            shutil.copyfile(template, store)

    def _start(self) -> None:
        argv = self.argv()  # checks every setting first
        state = self.state_dir
        if _options(self.settings)["firmware"] == "uefi":
            self._uefi_vars()
        self.socket_path.unlink(missing_ok=True)
        log = state / "qemu.log"
        pid = machines.spawn(argv, log, f"QEMU for {self.target.fqdn}", truncate=True)
        (state / "pid").write_text(f"{pid}\n")
        deadline = time.monotonic() + self.target.timeout
        while True:
            if not machines.exists(pid):
                (state / "pid").unlink(missing_ok=True)
                raise PowerError(f"QEMU for {self.target.fqdn} exited: {_tail(log)}")
            if self.socket_path.exists():
                try:
                    with Qmp(self.socket_path, max(min(deadline - time.monotonic(), QMP_TIMEOUT), 0.1)) as qmp:
                        qmp.execute("query-status")
                    return
                except QmpError:
                    pass  # not listening yet, or QEMU is failing: the next round tells which
            if time.monotonic() >= deadline:
                self._kill(pid)
                (state / "pid").unlink(missing_ok=True)
                raise PowerError(f"QEMU for {self.target.fqdn} did not answer on QMP within "
                                 f"{self.target.timeout:g} s: {_tail(log)}")
            time.sleep(0.05)

    def _kill(self, pid: int) -> None:
        machines.kill_group(pid, ((signal.SIGKILL, KILL_GRACE),), f"QEMU for {self.target.fqdn}")

    def _stop(self, pid: int) -> None:
        try:
            with self._qmp() as qmp:
                qmp.execute("quit")
        except QmpError:
            pass  # QEMU may close the socket before its answer; whether it exits is what counts
        if not machines.wait_gone(pid, QUIT_GRACE):
            self._kill(pid)

    def _status(self, pid: int) -> str:
        with self._qmp() as qmp:
            return qmp.execute("query-status").get("status", "")

    def _reset(self, pid: int) -> None:
        """Reset the guest and let it run, whatever state it was in."""
        with self._qmp() as qmp:
            qmp.execute("system_reset")
            if qmp.execute("query-status").get("status") != "running":
                qmp.execute("cont")

    def on(self) -> None:
        with machines.locked(self.state_dir):
            pid = self._pid()
            if pid is None:
                self._start()
                return
            try:
                if self._status(pid) in OFF_STATUSES:
                    self._reset(pid)
            except QmpError as error:
                if self._exiting(pid):  # it powered itself off just now
                    self._start()
                else:
                    raise PowerError(f"QEMU for {self.target.fqdn} (pid {pid}) does not answer: {error}") from None

    def off(self) -> None:
        with machines.locked(self.state_dir):
            pid = self._pid()
            if pid is not None:
                self._stop(pid)
            (self.state_dir / "pid").unlink(missing_ok=True)

    def reboot(self) -> None:
        with machines.locked(self.state_dir):
            pid = self._pid()
            if pid is not None:
                try:
                    self._reset(pid)
                    return
                except QmpError:
                    if not self._exiting(pid):  # hung: pull the plug, as a BMC's power cycle would
                        self._kill(pid)
            self._start()

    def interrupt(self) -> None:
        with machines.locked(self.state_dir):
            pid = self._pid()
            if pid is None:
                raise PowerError(f"QEMU machine {self.target.fqdn} is off: there is nothing to interrupt")
            try:
                with self._qmp() as qmp:
                    qmp.execute("inject-nmi")
            except QmpError as error:
                raise PowerError(f"QEMU for {self.target.fqdn} (pid {pid}): {error}") from None

    def status(self) -> str:
        pid = self._pid()
        if pid is None:
            return "off"
        try:
            return "off" if self._status(pid) in OFF_STATUSES else "on"
        except QmpError as error:
            if self._exiting(pid):
                return "off"
            raise PowerError(f"QEMU for {self.target.fqdn} (pid {pid}) does not answer: {error}") from None
