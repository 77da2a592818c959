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
    required = ("address", "user")  # no password: an empty one (some BMCs have none)

    def _chassis(self, action: str) -> str:
        argv = ["ipmitool", "-I", self.setting("interface", "lanplus"), "-H", self.setting("address"),
                "-U", self.setting("user"), "-E"]
        if self.setting("port"):
            argv += ["-p", self.setting("port")]
        env = {"IPMI_PASSWORD": self.setting("password")}
        return run(argv + ["chassis", "power", action], env, self.target.timeout, self.secret_values())

    def on(self) -> None:
        self._chassis("on")

    def off(self) -> None:
        self._chassis("off")

    def reboot(self) -> None:
        # "power cycle" is refused by many BMCs when the chassis is off.
        self._chassis("cycle" if self.status() == "on" else "on")

    def status(self) -> str:
        output = self._chassis("status")
        match = STATE.search(output)
        if match is None:
            raise PowerError(f"ipmitool status for {self.target.fqdn}: unexpected answer {output.strip()[:80]!r}")
        return match.group(1).lower()
