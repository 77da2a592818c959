"""`make demo-qemu`: `make demo`'s headline flow against a real QEMU VM instead of a simulated machine.

1. build the test guest (tests/support/guest.py: Debian's cloud kernel, a busybox stand-in installer that
   runs the kickstart's own sections, a syslinux boot disk) into .cache/guest, unless it is there already;
2. start `lablease-server serve` on SQLite in ./.lablease-demo-qemu (fresh each time) on a free loopback port,
   with a lab `qemu` whose install_url is http://10.0.2.2:<port> (how the VM reaches the host through
   QEMU's user network), a `qemu`-driven system whose disks are in data_dir/qemu-images, and the guest's
   kernel and initrd served over HTTP as distro tree Guest-1;
3. run `ansible-playbook playbooks/demo.yml`: the lease role reserves the system, installs Guest-1 on it
   (netboot config, power cycle: the VM's firmware netboots lablease's iPXE script, the stand-in installer
   fetches the kickstart and calls back), waits until the installed system has booted from its disk, runs
   a task, and returns it - meanwhile the VM's serial console is printed as it comes, prefixed "vm| ";
4. show the usage history and the commands, and check over the API that the system was returned and
   powered off; stop the server, and any QEMU left running, whatever happens.

Reuses scripts/demo.py's steps; needs QEMU and the guest's build tools (`make qemu`, scripts/ensure-qemu.sh).
"""
from __future__ import annotations

import json
import re
import shutil
import sys
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from demo import (ROOT, api, create_database_and_users, free_port, machine_running, run_playbook, running_server,
                  server_env, show_what_happened, step, wait_powered_off)

sys.path.insert(0, str(ROOT))  # tests.support.guest: the guest the real-VM tests build
from tests.support.guest import GuestFiles, build_guest  # noqa: E402

DATA = ROOT / ".lablease-demo-qemu"
LAB = "qemu"
SYSTEM = "qemu1.lab.test"
MAC = "52:54:00:de:0e:01"
DISTRO = {"name": "Guest-1", "family": "Guest1", "arch": "x86_64", "variant": "Server",
          "kernel": "vmlinuz", "initrd": "initramfs.gz", "kernel_options": "console=ttyS0", "labs": [LAB]}
PREFIX = "vm| "

ESCAPE = re.compile(r"\x1b(?:\[[0-?]*[ -/]*[@-~]|[^\[])")  # terminal control sequences (colours, clear screen)
TOKEN = re.compile(r"(token=)[^\s&\"']+")  # the kernel prints its command line: the kickstart URL's token


def console_text(raw: str) -> str:
    """A serial console line as a terminal would show it: no escape sequences, backspaces and carriage
    returns applied (iPXE's countdowns), tokens masked."""
    shown = ""
    for segment in ESCAPE.sub("", raw).split("\r"):
        chars: list[str] = []
        for char in segment:
            if char == "\b":
                if chars:
                    chars.pop()
            elif char == "\t" or (" " <= char and char != "\x7f"):
                chars.append(char)
        if "".join(chars).strip():
            shown = "".join(chars).rstrip()  # a carriage return starts over: the last text written wins
    return TOKEN.sub(r"\1***", shown)


class ConsoleTail(threading.Thread):
    """Print the VM's serial log (state_dir/serial.log) line by line as QEMU writes it, each prefixed, until
    stop(); meanwhile note when the QEMU process (state_dir/pid) exits."""

    def __init__(self, state_dir: Path, prefix: str = PREFIX, out=None, power_state=None):
        super().__init__(name=f"console of {state_dir.name}", daemon=True)
        self.state_dir, self.path = state_dir, state_dir / "serial.log"
        self.prefix, self.out = prefix, out or sys.stdout
        self.lines = 0
        self.power_state = power_state  # a function: the server's power_state for the system
        self.exited_at: datetime | None = None  # when the QEMU seen running last was found gone
        self.state_at_exit: str | None = None  # and what the server said then
        self._running_pid: int | None = None
        self._stop_event = threading.Event()

    def _watch_process(self) -> None:
        try:
            pid = int((self.state_dir / "pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            pid = None
        if pid is not None and machine_running(pid, self.state_dir):
            if pid != self._running_pid:
                self._running_pid, self.exited_at = pid, None
        elif self._running_pid is not None and self.exited_at is None:
            self.exited_at = datetime.now(timezone.utc)
            try:
                self.state_at_exit = self.power_state() if self.power_state else None
            except OSError:
                pass

    def run(self) -> None:
        offset, pending = 0, b""
        while True:
            stopping = self._stop_event.is_set()  # read once more after stop(): the last lines count too
            self._watch_process()
            try:
                with open(self.path, "rb") as file:
                    file.seek(offset)
                    chunk = file.read()
            except FileNotFoundError:
                chunk = b""
            offset += len(chunk)
            *complete, pending = (pending + chunk).split(b"\n")
            if stopping and pending:
                complete.append(pending)
                pending = b""
            self._show(complete)
            if stopping:
                return
            if not chunk:
                self._stop_event.wait(0.2)

    def _show(self, lines: list[bytes]) -> None:
        text = [console_text(line.decode(errors="replace")) for line in lines]
        text = [line for line in text if line]
        if text:
            self.out.write("".join(f"{self.prefix}{line}\n" for line in text))
            self.out.flush()
            self.lines += len(text)

    def stop(self) -> None:
        self._stop_event.set()
        self.join(10)


def add_system(url: str, admin_token: str, guest) -> None:
    """The VM: a `qemu`-driven system whose disks (the guest's boot disk, an empty state disk) are copied
    into data_dir/qemu-images, the only place the driver takes disks from."""
    images = DATA / "qemu-images"
    images.mkdir()
    names = []
    for disk in guest.make_disks(DATA / "vm-disks"):
        name = f"{SYSTEM}-{disk.name}"
        shutil.move(disk, images / name)
        names.append(name)
    system = api(url, admin_token, "/systems", {
        "fqdn": SYSTEM, "arch": "x86_64", "lab": LAB, "condition": "manual", "cpus": 1, "memory_mb": 512,
        "power": {"driver": "qemu", "memory": 512, "disks": names}, "netboot": {"mac": MAC}})
    print(f"{system['fqdn']}: lab {system['lab']}, power {system['power']}, netboot {system['netboot']}")


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def explain_power_state(url: str, token: str, exited_at: datetime | None, state_at_exit: str | None) -> None:
    """When the guest powered itself off (it does after its first boot) and what the server said then."""
    commands = list(reversed(api(url, token, f"/systems/{SYSTEM}/commands")))
    off = next((command for command in commands if command["action"] == "off"), None)
    if exited_at is None or off is None or state_at_exit is None \
            or _time(off["created_at"]) < exited_at.replace(microsecond=0):
        return  # QEMU ran until the release action powered it off
    running = [change for change in api(url, token, f"/systems/{SYSTEM}/usage")["changes"]
               if change["field"] == "usage" and change["new"] == "running"]
    step(f"{SYSTEM}: power state, as the server knew it")
    after = (exited_at.replace(microsecond=0) - _time(running[-1]["at"])).total_seconds() if running else None
    print(f"The guest powered itself off after its first boot: QEMU exited at {exited_at:%H:%M:%S}Z"
          + ("" if after is None else " (the second the system became running)" if after <= 0
             else f", {after:.0f} s after the system became running") + ".")
    print(f"The server's power_state said {state_at_exit!r} then, and until the release action's power off "
          f"(queued {_time(off['created_at']):%H:%M:%S}Z): it is what the driver read back after the last power "
          "command (the reboot into the installer), and nothing reads it again in between - which is why "
          "playbooks/files/demo-tasks.yml reports the power state instead of asserting it.")


def main() -> int:
    if shutil.which("qemu-system-x86_64") is None:
        print("qemu-system-x86_64 is not installed: run `make qemu` (scripts/ensure-qemu.sh) first", file=sys.stderr)
        return 1
    started = time.monotonic()
    shutil.rmtree(DATA, ignore_errors=True)
    DATA.mkdir()
    step("Building the guest into .cache/guest (once: kernel, stand-in installer, boot disk)")
    guest = build_guest()
    print(f"guest ready: {guest.kernel.parent.relative_to(ROOT)} ({time.monotonic() - started:.1f} s)")

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    install_url = f"http://10.0.2.2:{port}"
    # The lab's install_url is what the VM's boot loader and installer use; a stalled boot fails in 2 minutes.
    env = server_env(DATA, port, labs=json.dumps({LAB: {"install_url": install_url}}), install_timeout="120s")
    token, admin_token = create_database_and_users(env, DATA)
    files = GuestFiles(guest)
    try:
        with running_server(env, url, DATA, machines="qemu"):
            step(f"Adding {SYSTEM} in lab {LAB} (install_url {install_url}: the host as QEMU's user network "
                 "shows it), a QEMU VM (as labadmin)")
            add_system(url, admin_token, guest)
            step(f"Registering distro tree {DISTRO['name']}: the guest's kernel and initrd at {files.url()} "
                 "(as labadmin)")
            tree = api(url, admin_token, "/distro-trees", {**DISTRO, "url": files.url()})
            print(f"distro tree {tree['id']}: {tree['name']} {tree['arch']} at {tree['url']}, labs {tree['labs']}")

            state_dir = DATA / "qemu" / SYSTEM
            print(f"\nthe VM's serial console ({(state_dir / 'serial.log').relative_to(ROOT)}) follows, its lines "
                  f"prefixed {PREFIX!r}")
            tail = ConsoleTail(state_dir, power_state=lambda: api(url, token, f"/systems/{SYSTEM}")["power_state"])
            tail.start()
            try:
                played = run_playbook(env, url, token, SYSTEM, DISTRO["name"])
                if played:
                    wait_powered_off(url, token, SYSTEM)  # the console's last lines come before the power off
            finally:
                tail.stop()
            print(f"({tail.lines} console lines)")
            if not played:
                return 1
            if not show_what_happened(url, token, SYSTEM):
                return 1
            explain_power_state(url, token, tail.exited_at, tail.state_at_exit)
            step(f"Demo finished: a real VM was leased, installed, used and returned "
                 f"({time.monotonic() - started:.0f} s)")
            return 0
    finally:
        files.close()


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:  # the server and any QEMU were stopped on the way out
        print("\ninterrupted", file=sys.stderr)
        sys.exit(130)
