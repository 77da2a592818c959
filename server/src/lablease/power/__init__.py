"""Power drivers: turn a lab system on, off, reboot it, or interrupt it (a non-maskable interrupt, NMI).

Every driver, built-in or third-party, is a PowerDriver subclass registered
under the "lablease.power" entry-point group (see registry.py); the `virtual`
driver is one of them, not a special case. A failed action raises PowerError,
whose message has every secret of the system's power settings replaced by ***.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

ACTIONS = ("on", "off", "reboot", "interrupt")
MASK = "***"
SETTLE_STEP = 0.5  # seconds between readings while a BMC applies an action


class PowerError(Exception):
    """A power action failed; the message is safe to log (secrets scrubbed)."""


class NotApplied(PowerError):
    """The BMC accepted the action but the machine never reached the state it leads to."""


@dataclass(frozen=True)
class PowerTarget:
    fqdn: str
    settings: dict  # driver, address, user, password, id, ... (secrets included)
    timeout: float  # seconds an action may take before it is killed and counts as failed
    data_dir: Path  # virtual machines keep their pid and state under data_dir/virtual/
    scripts_dir: Path  # site power scripts, for the `command` driver
    tftp_root: Path  # a virtual machine reads its netboot config here
    mac: str | None  # the system's netboot MAC


def scrub(text: str, secrets) -> str:
    """text with each secret value replaced by ***; longest first, so one secret inside another is covered."""
    for secret in sorted({str(s) for s in secrets if s not in (None, "")}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


def cannot_interrupt(driver: str) -> str:
    return f"power driver {driver} cannot send an interrupt (NMI): only ipmitool, redfish, libvirt and qemu can"


class PowerDriver:
    name: str = ""
    interrupts: bool = False  # can send a non-maskable interrupt (NMI); `interrupt` is refused for the others
    required: tuple[str, ...] = ()  # settings keys that must be present
    secrets: tuple[str, ...] = ("password",)  # settings keys whose values never reach a log

    def __init__(self, target: PowerTarget):
        self.target = target
        self.settings = target.settings

    @classmethod
    def check(cls, settings: dict) -> None:
        """Raise ValueError when settings cannot work with this driver (called at add/edit time)."""
        missing = [key for key in cls.required if settings.get(key) in (None, "")]
        if missing:
            raise ValueError(f"power driver {cls.name} needs the setting(s) {', '.join(missing)}")

    def secret_values(self) -> list[str]:
        return [str(self.settings[key]) for key in self.secrets if self.settings.get(key) not in (None, "")]

    def setting(self, key: str, default: str = "") -> str:
        value = self.settings.get(key)
        return default if value in (None, "") else str(value)

    def on(self) -> None:
        raise NotImplementedError

    def off(self) -> None:
        raise NotImplementedError

    def reboot(self) -> None:
        raise NotImplementedError

    def interrupt(self) -> None:
        """A non-maskable interrupt (NMI): a kernel set to panic on one dumps its core (kdump) and reboots."""
        raise PowerError(cannot_interrupt(self.name))

    def status(self) -> str:
        """"on", "off" or "unknown"; drivers that can ask raise PowerError when asking fails."""
        return "unknown"

    def act(self, action: str) -> None:
        """Run one of ACTIONS; any failure comes out as a PowerError with the secrets scrubbed."""
        if action not in ACTIONS:
            raise PowerError(f"unknown power action {action!r} (known: {', '.join(ACTIONS)})")
        try:
            getattr(self, action)()
        except PowerError as error:
            raise PowerError(scrub(str(error), self.secret_values())) from None
        except Exception as error:  # a driver bug or library error must not leak a password into a log
            message = f"{self.name} {action} on {self.target.fqdn}: {type(error).__name__}: {error}"
            raise PowerError(scrub(message, self.secret_values())) from None

    def settle(self, expected: str, deadline: float) -> str:
        """The power state read back once the last action has taken effect: "on", "off" or "unknown".

        Real BMCs (Redfish, IPMI) accept an action at once and apply it seconds later, so the first
        reading can still be the old state; it is read again until it is `expected` or the driver cannot
        tell ("unknown"), up to `deadline` (time.monotonic()). NotApplied when the state never came;
        a failed reading raises PowerError as status() does.
        """
        while True:
            state = self.status()
            if state in (expected, "unknown"):
                return state
            if time.monotonic() >= deadline:
                raise NotApplied(f"{self.name} on {self.target.fqdn}: the machine still reads {state}, "
                                 f"not {expected}, {self.target.timeout:g} s after the action")
            time.sleep(SETTLE_STEP)
