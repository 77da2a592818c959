"""IPMI through ipmitool: `ipmitool -I lanplus -H <bmc> -U <user> -E chassis power ...`.

`-E` makes ipmitool read the password from IPMI_PASSWORD, so it never
appears on a command line.
"""
from __future__ import annotations

import re

from . import PowerDriver, PowerError
from .process import run

STATE = re.compile(r"Chassis Power is (on|off)", re.IGNORECASE)


class IpmitoolDriver(PowerDriver):
    name = "ipmitool"
    interrupts = True
    required = ("address", "user")  # no password: an empty one (some BMCs have none)

    @classmethod
    def check(cls, settings: dict) -> None:
        super().check(settings)
        suite = settings.get("cipher_suite")
        if suite not in (None, "") and not (str(suite).isdigit() and int(suite) <= 17):
            raise ValueError(f"power setting cipher_suite must be an IPMI cipher suite number, 0 to 17 (not {suite!r})")
        # IPMI holds 20 bytes of password (16 for IPMI 1.5, interface lan); ipmitool refuses a longer one.
        limit = 16 if settings.get("interface") == "lan" else 20
        if len(str(settings.get("password") or "").encode()) > limit:
            raise ValueError(f"power setting password is longer than the {limit} bytes IPMI allows")

    def _chassis(self, action: str) -> str:
        argv = ["ipmitool", "-I", self.setting("interface", "lanplus"), "-H", self.setting("address"),
                "-U", self.setting("user"), "-E"]
        if self.setting("port"):
            argv += ["-p", self.setting("port")]
        if self.setting("cipher_suite"):
            # Named, ipmitool skips asking the BMC for its suites: some BMCs (ipmi_sim among them) do not
            # answer that, and each call then waits 10 s before falling back.
            argv += ["-C", self.setting("cipher_suite")]
        env = {"IPMI_PASSWORD": self.setting("password")}
        return run(argv + ["chassis", "power", action], env, self.target.timeout, self.secret_values())

    def on(self) -> None:
        self._chassis("on")

    def off(self) -> None:
        self._chassis("off")

    def reboot(self) -> None:
        # "power cycle" is refused by many BMCs when the chassis is off.
        self._chassis("cycle" if self.status() == "on" else "on")

    def interrupt(self) -> None:
        self._chassis("diag")  # "pulse a diagnostic interrupt (NMI) directly to the processor(s)"

    def status(self) -> str:
        output = self._chassis("status")
        match = STATE.search(output)
        if match is None:
            raise PowerError(f"ipmitool status for {self.target.fqdn}: unexpected answer {output.strip()[:80]!r}")
        return match.group(1).lower()
