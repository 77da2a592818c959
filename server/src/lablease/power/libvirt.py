"""libvirt guests through virsh: the system's `address` is the domain name."""
from __future__ import annotations

from . import PowerDriver
from .process import run

ON_STATES = {"running", "paused", "idle", "in shutdown", "blocked", "pmsuspended"}
OFF_STATES = {"shut off", "crashed"}


class LibvirtDriver(PowerDriver):
    name = "libvirt"
    interrupts = True
    required = ("address",)

    def _virsh(self, command: str) -> str:
        argv = ["virsh", "-c", self.setting("uri", "qemu:///system"), command, self.setting("address")]
        return run(argv, {}, self.target.timeout, self.secret_values())

    # virsh refuses to start a running domain or destroy a stopped one; asking first makes on/off idempotent.
    def on(self) -> None:
        if self.status() != "on":
            self._virsh("start")

    def off(self) -> None:
        if self.status() != "off":
            self._virsh("destroy")

    def reboot(self) -> None:
        self._virsh("reset" if self.status() == "on" else "start")

    def interrupt(self) -> None:
        self._virsh("inject-nmi")

    def status(self) -> str:
        state = self._virsh("domstate").strip().lower()
        if state in ON_STATES:
            return "on"
        return "off" if state in OFF_STATES else "unknown"
