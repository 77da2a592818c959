"""A simulated lab machine that goes through the real provisioning protocol.

Powered on, it does what firmware and an installer would: read its iPXE script
from the TFTP root, fetch the kickstart the script names, call the
installation callbacks found in it, "reboot", and on the first boot of the
installed system call postinstall_done. Nothing is short-circuited, so a
server that writes a wrong netboot config or kickstart fails against it as it
would against hardware.
"""
from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import requests

EVENTS = ("install_start", "install_done", "postinstall_done", "install_fail")
CALLBACK = re.compile(r"https?://[^\s\"'<>;&|()]*?/api/v1/installations/\d+/(%s)\?token=[^\s\"'<>;&|()]+"
                      % "|".join(EVENTS))
KICKSTART = re.compile(r"(?:^|\s)(?:inst\.)?ks=(\S+)")
REBOOT_WAIT = 30.0  # the server rewrites the netboot config through its own queue, so give it time
POLL = 0.5
HTTP_TIMEOUT = 10.0
MAX_CHAIN = 3


class PoweredOff(BaseException):
    """SIGTERM: somebody pulled the (virtual) plug. A BaseException, like SystemExit, so nothing swallows it."""


class Unplugged(BaseException):
    """The state dir or TFTP root went away: the lab this machine belonged to is gone."""


@dataclass(frozen=True)
class Boot:
    kind: str  # "none" (no config), "local", "install", "chain", "nothing" (a script with nothing bootable)
    url: str = ""


def netboot_file(tftp_root: Path, mac: str) -> Path:
    """Where the machine's iPXE script lives: ipxe/<mac, lower case, hyphens>."""
    return Path(tftp_root) / "ipxe" / mac.strip().lower().replace(":", "-")


def parse_ipxe(text: str | None) -> Boot:
    """What an iPXE script would boot, by its first boot command."""
    if text is None:
        return Boot("none")
    for line in text.splitlines():
        words = line.split()
        if not words or words[0].startswith("#"):
            continue
        if words[0] in ("sanboot", "exit"):  # exit hands over to the next BIOS boot device: the disk
            return Boot("local")
        if words[0] == "kernel":
            kickstart = KICKSTART.search(line)
            return Boot("install", kickstart.group(1)) if kickstart else Boot("nothing")
        if words[0] == "chain":
            urls = [word for word in words[1:] if not word.startswith("--")]
            return Boot("chain", urls[0]) if urls else Boot("nothing")
    return Boot("nothing")


def callbacks(kickstart: str) -> dict[str, str]:
    """The installation callback URLs in a kickstart, by event; the first of each wins."""
    found: dict[str, str] = {}
    for match in CALLBACK.finditer(kickstart):
        found.setdefault(match.group(1), match.group(0))
    return found


def without_token(url: str) -> str:
    """A URL fit for the console log: the token would let a reader fake callbacks."""
    return url.split("?", 1)[0]


class Machine:
    def __init__(self, fqdn: str, mac: str | None, tftp_root: Path, state_dir: Path,
                 boot_delay: float = 1.0, install_delay: float = 2.0, fail_install: bool = False, out=None):
        self.fqdn, self.mac = fqdn, mac
        self.tftp_root, self.state_dir = Path(tftp_root), Path(state_dir)
        self.boot_delay, self.install_delay, self.fail_install = boot_delay, install_delay, fail_install
        self.out = out or sys.stdout
        self.had_tftp_root = self.tftp_root.is_dir()  # a lab may have no TFTP root until its first netboot config
        self.http = None

    @property
    def marker(self) -> Path:
        return self.state_dir / "firstboot"

    def log(self, message: str) -> None:
        stamp = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
        print(f"{stamp} {self.fqdn}: {message}", file=self.out, flush=True)

    def check_plugged(self) -> None:
        if not self.state_dir.is_dir() or (self.had_tftp_root and not self.tftp_root.is_dir()):
            raise Unplugged()

    def wait(self, seconds: float, step: float = 1.0) -> None:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            self.check_plugged()
            time.sleep(min(step, left))
        self.check_plugged()

    def run(self) -> None:
        """Power on: boot, install as often as the netboot config says, then idle until powered off."""
        self.log(f"power on (mac {self.mac or 'none'})")
        with requests.Session() as self.http:
            self.http.trust_env = False  # firmware knows no proxies
            # A connection per call, as iPXE and the installer's curl make: a kept-alive one idle through an
            # install step could be closed by the server just as install_done goes out (a lost callback).
            self.http.headers["Connection"] = "close"
            script = self.netboot_script()
            while self.boot(script):
                script = self.await_new_config(script)
        self.idle()

    def netboot_script(self) -> str | None:
        if not self.mac:
            return None
        try:
            return netboot_file(self.tftp_root, self.mac).read_text()
        except (FileNotFoundError, NotADirectoryError):
            return None

    def boot(self, script: str | None) -> bool:
        """One boot from this netboot script; True when it installed a system and now reboots."""
        self.log("firmware starting")
        self.wait(self.boot_delay)
        boot = parse_ipxe(script)
        for _ in range(MAX_CHAIN):
            if boot.kind != "chain":
                break
            self.log(f"iPXE chains to {without_token(boot.url)}")
            boot = parse_ipxe(self.fetch(boot.url) or "")
        if boot.kind in ("none", "local"):
            self.boot_disk("no netboot config" if boot.kind == "none" else "netboot says local boot")
            return False
        if boot.kind == "install":
            return self.install(boot.url)
        self.log("netboot config has nothing to boot: boot failed")
        return False

    def boot_disk(self, why: str) -> None:
        self.log(f"{why}: booting the local disk")
        if not self.marker.exists():
            self.log("running")
            return
        url = self.marker.read_text().strip()
        self.marker.unlink()  # first boot happens once, even if the call below is interrupted
        self.log("first boot of the installed system")
        self.post(url)
        self.log("running")

    def install(self, kickstart_url: str) -> bool:
        self.log(f"installer fetches kickstart {without_token(kickstart_url)}")
        kickstart = self.fetch(kickstart_url)
        if kickstart is None:
            self.log("no kickstart: boot failed")
            return False
        found = callbacks(kickstart)
        self.log(f"kickstart has callbacks: {', '.join(e for e in EVENTS if e in found) or 'none'}")
        self.post(found.get("install_start"))
        self.log(f"installing ({self.install_delay:g} s)")
        self.wait(self.install_delay)
        if self.fail_install:
            self.post(found.get("install_fail"))
            self.log("installation failed: installer halted")
            return False
        self.post(found.get("install_done"))
        if found.get("postinstall_done"):
            self.marker.write_text(found["postinstall_done"] + "\n")
        self.log("installation finished: rebooting")
        return True

    def await_new_config(self, old: str | None) -> str | None:
        """The netboot script after an install: the server rewrites it, so wait a while for a change."""
        deadline = time.monotonic() + REBOOT_WAIT
        if (script := self.netboot_script()) == old:
            # Said once, after the first look: the console shows the machine is waiting, not rebooting.
            self.log(f"netboot config unchanged: waiting up to {REBOOT_WAIT:g} s for the server to rewrite it")
        while script == old and time.monotonic() < deadline:
            self.wait(POLL, POLL)
            script = self.netboot_script()
        if script == old:
            self.log(f"netboot config unchanged after {REBOOT_WAIT:g} s: booting it again")
        return script

    def fetch(self, url: str) -> str | None:
        try:
            response = self.http.get(url, timeout=HTTP_TIMEOUT)
        except requests.RequestException as error:  # a network failure is a failed boot, never a crash
            self.log(f"GET {without_token(url)} failed: {type(error).__name__}")
            return None
        if response.status_code != 200:
            self.log(f"GET {without_token(url)} answered {response.status_code}")
            return None
        return response.text

    def post(self, url: str | None) -> None:
        if not url:
            self.log("(no callback URL for this step in the kickstart)")
            return
        event = url.split("?", 1)[0].rsplit("/", 1)[-1]
        try:
            status = self.http.post(url, timeout=HTTP_TIMEOUT).status_code
        except requests.RequestException as error:
            self.log(f"{event}: POST {without_token(url)} failed: {type(error).__name__}")
            return
        self.log(f"{event}: POST {without_token(url)} answered {status}")

    def idle(self) -> None:
        while True:
            self.wait(3600)
