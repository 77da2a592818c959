"""A real VM for the netboot tests: a guest kernel, an initramfs whose /init is a stand-in
installer (guest_init.sh), and a boot disk holding "the installed system", built at test time.

    guest = build_guest()                        # once; cached in .cache/guest/
    disks = guest.make_disks(tmp_path / "vm1")   # [boot disk, state disk], fresh per VM
    with GuestFiles(guest) as files:             # distro tree: files.url(), vmlinuz, initramfs.gz
        ...                                      # write netboot files / provision through the server
        with VM(qemu_command(disks, tftp_root, tmp_path / "vm1" / "console.log")) as vm:
            vm.wait(180)                         # the guest powers itself off when done

Nothing is installed on the host but Debian packages (scripts/ensure-qemu.sh): the kernel is
`apt-get download`ed and unpacked into the cache. `python tests/support/guest.py --smoke` boots
it through lablease's netboot files and default kickstart without the server.
"""
from __future__ import annotations

import fcntl
import gzip
import hashlib
import http.server
import io
import lzma
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEFAULT_CACHE = REPO / ".cache" / "guest"
INIT_SCRIPT = Path(__file__).with_name("guest_init.sh")
VERSION = 1  # bump when the build changes in a way the inputs below do not show
KERNEL_META_PACKAGE = "linux-image-cloud-amd64"
MODULES = ("failover", "net_failover", "virtio_ring", "virtio", "virtio_pci_legacy_dev",
           "virtio_pci_modern_dev", "virtio_pci", "virtio_net", "virtio_blk")
BOOT_DISK_MIB = 32
STATE_DISK_MIB = 4
DEFAULT_MAC = "52:54:00:12:34:56"
SYSLINUX_CFG = """\
SERIAL 0 115200
DEFAULT installed
PROMPT 0
TIMEOUT 0
LABEL installed
  KERNEL VMLINUZ
  INITRD INITRD.GZ
  APPEND lablease.boot=disk console=ttyS0
"""
TOOLS = {"busybox": "busybox-static", "mkfs.fat": "dosfstools", "mcopy": "mtools", "syslinux": "syslinux",
         "dpkg-deb": "dpkg", "apt-get": "apt"}


@dataclass(frozen=True)
class Guest:
    kernel: Path              # vmlinuz
    initrd: Path              # initramfs.gz: busybox, the virtio modules, /init
    boot_disk_template: Path  # raw FAT image with syslinux: the installed system's disk; copy it per VM

    def make_disks(self, vm_dir: Path) -> list[Path]:
        """Fresh disks for one VM: [boot disk (a copy of the template), state disk (zeros)]."""
        vm_dir = Path(vm_dir)
        vm_dir.mkdir(parents=True, exist_ok=True)
        boot, state = vm_dir / "boot.img", vm_dir / "state.img"
        shutil.copyfile(self.boot_disk_template, boot)
        with open(state, "wb") as file:
            file.truncate(STATE_DISK_MIB << 20)
        return [boot, state]


def build_guest(cache_dir: Path = DEFAULT_CACHE) -> Guest:
    """The guest, built into cache_dir unless a complete build with the same inputs is there."""
    cache_dir = Path(cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    guest = Guest(cache_dir / "vmlinuz", cache_dir / "initramfs.gz", cache_dir / "boot-disk.img")
    with open(cache_dir / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # concurrent test processes build once
        stamp = cache_dir / "stamp"
        if _read(stamp).split("\n")[0] == _stamp() and all(
                path.is_file() for path in (guest.kernel, guest.initrd, guest.boot_disk_template)):
            return guest
        stamp.unlink(missing_ok=True)
        missing = sorted({package for tool, package in TOOLS.items() if shutil.which(tool) is None})
        if missing:
            raise RuntimeError(f"missing {', '.join(missing)}: run scripts/ensure-qemu.sh")
        with tempfile.TemporaryDirectory(dir=cache_dir, prefix=".build-") as work:
            package = _build(Path(work), cache_dir)
            for name in ("vmlinuz", "initramfs.gz", "boot-disk.img"):
                os.replace(Path(work) / name, cache_dir / name)
        stamp.write_text(f"{_stamp()}\nkernel package: {package}\n")
    return guest


def _stamp() -> str:
    inputs = "\0".join([str(VERSION), INIT_SCRIPT.read_text(), " ".join(MODULES), SYSLINUX_CFG,
                        str(BOOT_DISK_MIB)])
    return f"lablease-guest {VERSION} {hashlib.sha256(inputs.encode()).hexdigest()[:16]}"


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


def _build(work: Path, cache_dir: Path) -> str:
    package, deb = _download_kernel(cache_dir / "debs")
    tree = work / "kernel"
    _run("dpkg-deb", "-x", deb, tree)
    kernel = next(iter(sorted(tree.glob("boot/vmlinuz-*"))), None)
    module_dirs = sorted(tree.glob("lib/modules/*")) + sorted(tree.glob("usr/lib/modules/*"))
    if kernel is None or not module_dirs:
        raise RuntimeError(f"{deb.name} holds no boot/vmlinuz-* or lib/modules/*")
    shutil.copyfile(kernel, work / "vmlinuz")
    modules = _modules(module_dirs[0])
    (work / "initramfs.gz").write_bytes(gzip.compress(_initramfs(modules), compresslevel=6, mtime=0))
    shutil.rmtree(tree)
    _boot_disk(work)
    return package


def _download_kernel(debs: Path) -> tuple[str, Path]:
    """`apt-get download` the cloud kernel (kept in debs/; older ones removed)."""
    package = _kernel_package()
    debs.mkdir(exist_ok=True)
    found = sorted(debs.glob(f"{package}_*.deb"))
    if not found:
        for old in debs.glob("*.deb"):
            old.unlink()
        _run("apt-get", "download", "-q", "-o", "APT::Sandbox::User=root", package, cwd=debs)
        found = sorted(debs.glob(f"{package}_*.deb"))
    if not found:
        raise RuntimeError(f"apt-get download {package} left no .deb in {debs}")
    return package, found[-1]


def _kernel_package() -> str:
    """The real package behind linux-image-cloud-amd64, e.g. linux-image-6.1.0-50-cloud-amd64."""
    for attempt in (1, 2):
        result = subprocess.run(["apt-cache", "depends", KERNEL_META_PACKAGE], capture_output=True, text=True)
        match = re.search(r"Depends: (linux-image-\S+-cloud-amd64)\b", result.stdout)
        if match:
            return match.group(1)
        if attempt == 1 and os.geteuid() == 0:  # no package lists yet
            subprocess.run(["apt-get", "update", "-qq"], capture_output=True)
    raise RuntimeError(f"cannot resolve {KERNEL_META_PACKAGE} with apt-cache (apt-get update?): "
                       f"{result.stderr.strip()}")


def _modules(moddir: Path) -> list[tuple[str, bytes]]:
    """MODULES and what they depend on, in load order, decompressed; built-in ones left out.

    The package has no modules.dep (depmod makes it on install): each module's own
    `depends=` (its .modinfo) says what must be loaded first.
    """
    builtin = {_module_name(line) for line in _read(moddir / "modules.builtin").split()}
    files = {_module_name(path.name): path for path in moddir.rglob("*.ko*")}
    ordered: dict[str, bytes] = {}

    def add(name: str) -> None:
        if name in builtin or name in ordered:
            return
        if name not in files:
            raise RuntimeError(f"kernel module {name} is neither built in nor under {moddir}")
        data = _decompress(files[name])
        depends = re.search(rb"(?:^|\0)depends=([^\0]*)\0", data)
        for need in (depends.group(1).decode().split(",") if depends else []):
            if need:
                add(need.replace("-", "_"))
        ordered[name] = data

    for name in MODULES:
        add(name)
    return list(ordered.items())


def _module_name(path: str) -> str:
    return re.sub(r"\.ko(\.\w+)?$", "", os.path.basename(path)).replace("-", "_")


def _decompress(path: Path) -> bytes:
    data = path.read_bytes()
    if path.suffix == ".xz":
        return lzma.decompress(data)
    if path.suffix == ".gz":
        return gzip.decompress(data)
    if path.suffix == ".zst":
        return subprocess.run(["zstd", "-dc", str(path)], capture_output=True, check=True).stdout
    return data


def _initramfs(modules: list[tuple[str, bytes]]) -> bytes:
    busybox = Path(shutil.which("busybox")).resolve().read_bytes()
    if b"ld-linux" in busybox[:8192]:
        raise RuntimeError("busybox is dynamically linked: install busybox-static (scripts/ensure-qemu.sh)")
    archive = _Cpio()
    for directory in ("bin", "dev", "etc", "lib", "lib/modules", "lib/modules/lablease", "mnt", "proc",
                      "root", "sbin", "sys", "tmp", "usr", "usr/bin", "usr/sbin"):
        archive.add(directory, 0o040755)
    archive.add("dev/console", 0o020600, rdev=(5, 1))  # the kernel opens it before running /init
    archive.add("bin/busybox", 0o100755, busybox)
    archive.add("init", 0o100755, INIT_SCRIPT.read_bytes())
    for name, data in modules:
        archive.add(f"lib/modules/lablease/{name}.ko", 0o100644, data)
    archive.add("lib/modules/lablease/order", 0o100644, "".join(f"{name}\n" for name, _ in modules).encode())
    return archive.finish()


class _Cpio:
    """A "newc" cpio archive, as the kernel unpacks initramfs images (no host cpio needed)."""

    def __init__(self):
        self._out = io.BytesIO()
        self._inode = 0

    def add(self, name: str, mode: int, data: bytes = b"", rdev: tuple[int, int] = (0, 0)) -> None:
        self._inode += 1
        nlink = 2 if mode & 0o170000 == 0o040000 else 1
        fields = (self._inode, mode, 0, 0, nlink, 0, len(data), 0, 0, rdev[0], rdev[1], len(name) + 1, 0)
        self._out.write(b"070701" + b"".join(b"%08X" % field for field in fields) + name.encode() + b"\0")
        self._pad()
        self._out.write(data)
        self._pad()

    def _pad(self) -> None:
        self._out.write(b"\0" * (-self._out.tell() % 4))

    def finish(self) -> bytes:
        self.add("TRAILER!!!", 0)
        return self._out.getvalue()


def _boot_disk(work: Path) -> None:
    """A partitionless FAT image with syslinux in its boot record, made without mounting it."""
    image = work / "boot-disk.img"
    with open(image, "wb") as file:
        file.truncate(BOOT_DISK_MIB << 20)
    (work / "syslinux.cfg").write_text(SYSLINUX_CFG)
    _run("mkfs.fat", "-n", "LABLEASE", image)
    for source, target in (("vmlinuz", "VMLINUZ"), ("initramfs.gz", "INITRD.GZ"), ("syslinux.cfg", "SYSLINUX.CFG")):
        _run("mcopy", "-o", "-i", image, work / source, f"::{target}")
    _run("syslinux", "--install", image)


def _run(*command, cwd=None) -> None:
    env = dict(os.environ, MTOOLS_SKIP_CHECK="1")
    result = subprocess.run([str(part) for part in command], cwd=cwd, env=env, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, command))} failed ({result.returncode}): "
                           f"{(result.stderr or result.stdout).strip()}")


# --- running a VM ------------------------------------------------------------

def qemu_command(disks: list[Path], tftp_root: Path, console_log: Path, *, mac: str = DEFAULT_MAC,
                 memory_mb: int = 512, boot_file: str = "boot.ipxe", extra: tuple[str, ...] = ()) -> list[str]:
    """QEMU booting from the network first (user-mode network: the host is 10.0.2.2), TCG only.

    Without -no-reboot: the installer's reboot netboots again, as a lab machine would.
    """
    command = ["qemu-system-x86_64", "-accel", "tcg", "-m", str(memory_mb), "-nodefaults", "-nographic",
               "-serial", f"file:{console_log}",
               "-netdev", f"user,id=n0,tftp={tftp_root},bootfile={boot_file}",
               "-device", f"virtio-net-pci,netdev=n0,mac={mac}", "-boot", "n"]
    for disk in disks:
        command += ["-drive", f"file={disk},format=raw,if=virtio"]
    return command + list(extra)


class VM:
    """A QEMU process in its own process group; leaving the `with` kills the group."""

    def __init__(self, command: list[str]):
        self.command = command
        self.process: subprocess.Popen | None = None
        self._output = tempfile.TemporaryFile()  # a file, not a pipe: a full pipe would stall QEMU

    def start(self) -> VM:
        self.process = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=self._output,
                                        stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def wait(self, timeout: float) -> int:
        """QEMU's exit status (0 when the guest powered off); raises subprocess.TimeoutExpired."""
        return self.process.wait(timeout)

    def stop(self) -> None:
        if self.process is None:
            return
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait()

    def output(self) -> str:
        """What QEMU itself printed (its errors and warnings)."""
        self._output.seek(0)
        return self._output.read().decode(errors="replace")

    def __enter__(self) -> VM:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
        self._output.close()


class GuestFiles:
    """The guest's kernel and initrd over HTTP on 127.0.0.1, for a distro tree a VM installs from:
    url `http://10.0.2.2:<port>/` (as the guest reaches the host), kernel `vmlinuz`, initrd `initramfs.gz`.
    """

    def __init__(self, guest: Guest):
        files = {"/vmlinuz": guest.kernel, "/initramfs.gz": guest.initrd}

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                path = files.get(self.path.partition("?")[0])
                body = path.read_bytes() if path else b"not found\n"
                self.send_response(200 if path else 404)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self._httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self._httpd.server_address[1]
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def url(self, host: str = "10.0.2.2") -> str:
        return f"http://{host}:{self.port}/"

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def __enter__(self) -> GuestFiles:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# --- smoke check: python tests/support/guest.py --smoke --------------------------
# The whole two-boot flow through lablease's own netboot files and default kickstart, with a tiny
# HTTP server standing in for lablease (kickstart, callbacks; install_done switches the MAC
# to local boot as the server's worker would), then a broken kickstart that must report install_fail.

EVENTS = ("install_start", "install_done", "postinstall_done", "install_fail")


class _StandInServer:
    """Serves the kickstart on 127.0.0.1 (10.0.2.2 to the guest) and records the callbacks."""

    def __init__(self, tftp_root: Path, mac: str):

        from lablease.provision import netboot
        self.tftp_root, self.mac = tftp_root, mac
        self.kickstart = ""
        self.events: list[tuple[str, float]] = []
        self.started = 0.0
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                path, _, query = self.path.partition("?")
                if path == "/api/v1/installations/1/kickstart" and query == "token=t":
                    self._answer(200, server.kickstart.encode())
                else:
                    self._answer(404, b"not found\n")

            def do_POST(self):
                path, _, query = self.path.partition("?")
                event = path.rpartition("/")[2]
                if not path.startswith("/api/v1/installations/1/") or event not in EVENTS or query != "token=t":
                    return self._answer(403, b"")
                if event == "install_done":
                    netboot.write(server.tftp_root, server.mac, None)
                server.events.append((event, time.monotonic() - server.started))
                self._answer(204, b"")

            def _answer(self, status, body):
                self.send_response(status)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://10.0.2.2:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def _kickstart(base: str, site_dir: Path, mac: str) -> str:
    from lablease.provision.kickstart import KickstartRenderer
    callbacks = {event: f"{base}/api/v1/installations/1/{event}?token=t" for event in EVENTS}
    return KickstartRenderer(site_dir).render({
        "system": {"fqdn": "vm1.lab.test", "arch": "x86_64", "lab": "lab", "cpus": 1, "memory_mb": 512,
                   "attributes": {}, "mac": mac},
        "distro": {"name": "StandIn-1", "family": "StandIn1", "arch": "x86_64", "variant": "Server",
                   "url": f"{base}/tree/", "kernel": "vmlinuz", "initrd": "initrd"},
        "recipe": None, "installation": {"id": 1}, "ks_meta": {}, "kernel_options": "console=ttyS0",
        "server_url": base, "kickstart_url": f"{base}/api/v1/installations/1/kickstart?token=t",
        "callbacks": callbacks})


def _site_dir(root: Path, broken: bool, strict: bool) -> Path:
    """Site templates: a post_install snippet that fails (broken), and the callback fix when needed."""
    from lablease.provision.kickstart import BUILTIN_TEMPLATES
    snippets = root / "site" / "snippets"
    snippets.mkdir(parents=True)
    if broken:
        (snippets / "post_install").write_text("echo 'post_install: failing on purpose'\nexit 3\n")
    callback = (BUILTIN_TEMPLATES / "snippets" / "lablease_callback").read_text()
    if "wget -q -T 30 " in callback and not strict:
        print("NOTE: the built-in lablease_callback passes -T to wget, which crashes Debian's busybox wget;"
              " using `timeout 30 wget -q ...` instead (--strict: the built-in as it is)")
        (snippets / "lablease_callback").write_text(callback.replace("wget -q -T 30 ", "timeout 30 wget -q "))
    return root / "site"


def _boot(guest_disks, tftp_root, log, deadline) -> float:
    started = time.monotonic()
    with VM(qemu_command(guest_disks, tftp_root, log)) as vm:
        try:
            status = vm.wait(deadline)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"the VM did not power off within {deadline} s") from None
        if status != 0:
            raise AssertionError(f"QEMU exited with {status}: {vm.output()}")
    return time.monotonic() - started


def _smoke_case(guest: Guest, root: Path, broken: bool, strict: bool) -> None:
    from lablease.provision import netboot
    tftp_root, log = root / "tftp", root / "console.log"
    disks = guest.make_disks(root / "vm")
    server, files = _StandInServer(tftp_root, DEFAULT_MAC), GuestFiles(guest)
    try:
        server.kickstart = _kickstart(server.base, _site_dir(root, broken, strict), DEFAULT_MAC)
        netboot.write(tftp_root, DEFAULT_MAC, netboot.BootImage(
            files.url() + "vmlinuz", files.url() + "initramfs.gz",
            f"console=ttyS0 inst.ks={server.base}/api/v1/installations/1/kickstart?token=t"))
        server.started = time.monotonic()
        try:
            took = _boot(disks, tftp_root, log, 180)
            names = [event for event, _ in server.events]
            expected = ["install_start", "install_fail"] if broken else ["install_start", "install_done",
                                                                         "postinstall_done"]
            if names != expected:
                raise AssertionError(f"callbacks {names}, expected {expected}")
            timings = ", ".join(f"{event} {at:.1f} s" for event, at in server.events)
            print(f"{'broken kickstart' if broken else 'two-boot install'}: {timings}, powered off {took:.1f} s")
            if not broken:  # a third boot: the installed system again, first-boot work already done
                log.rename(root / "console-1.log")
                took = _boot(disks, tftp_root, log, 120)
                if server.events[3:] or "nothing to do on first boot" not in log.read_text(errors="replace"):
                    raise AssertionError(f"the next boot did not find its first-boot work done: {server.events}")
                print(f"next boot of the installed system: nothing to do, powered off {took:.1f} s")
        except AssertionError:
            console = log.read_text(errors="replace") if log.exists() else ""
            print("\n".join(console.splitlines()[-60:]))
            raise
    finally:
        server.close()
        files.close()


def _main(argv: list[str]) -> int:
    import argparse
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--smoke", action="store_true", help="boot it through lablease's netboot and kickstart")
    parser.add_argument("--strict", action="store_true", help="use the built-in callback snippet as it is")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (console logs)")
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE)
    args = parser.parse_args(argv)
    subprocess.run([str(REPO / "scripts" / "ensure-qemu.sh")], check=True)
    started = time.monotonic()
    guest = build_guest(args.cache)
    print(f"guest ready in {time.monotonic() - started:.1f} s: {guest.kernel.parent}")
    if not args.smoke:
        return 0
    work = Path(tempfile.mkdtemp(prefix="lablease-guest-smoke-"))
    try:
        for broken in (False, True):
            _smoke_case(guest, work / ("broken" if broken else "good"), broken, args.strict)
    except AssertionError as error:
        print(f"FAILED: {error} (console logs in {work})")
        return 1
    if args.keep:
        print(f"console logs in {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)
    print("smoke check passed")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "server" / "src"))
    sys.exit(_main(sys.argv[1:]))
