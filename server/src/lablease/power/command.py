"""Site power scripts, Beaker style: the script reads what to do from its environment.

The `script` setting is a plain name looked up in the scripts directory; a path
would let anyone who may edit a system run any program on the server.
"""
from __future__ import annotations

import os
import re

from . import PowerDriver, PowerError
from .process import run

PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]*")


class CommandDriver(PowerDriver):
    name = "command"
    required = ("script",)

    @classmethod
    def check(cls, settings: dict) -> None:
        super().check(settings)
        script = str(settings["script"])
        if not PLAIN_NAME.fullmatch(script) or ".." in script:
            raise ValueError(f"power script {script!r} must be a plain file name in the scripts directory "
                             "(letters, digits, . _ + -; no '/' or '..')")

    def _script(self) -> str:
        name = self.setting("script")
        if not PLAIN_NAME.fullmatch(name) or ".." in name:
            raise PowerError(f"power script {name!r} for {self.target.fqdn} is not a plain name")
        path = self.target.scripts_dir / name
        if not path.is_file() or not os.access(path, os.X_OK):
            raise PowerError(f"power script {name} for {self.target.fqdn} is missing or not executable "
                             f"in {self.target.scripts_dir}")
        return str(path)

    def _run(self, mode: str) -> None:
        env = {
            "power_mode": mode,
            "power_address": self.setting("address"),
            "power_id": self.setting("id"),
            "power_user": self.setting("user"),
            "power_pass": self.setting("password"),
            "LABLEASE_FQDN": self.target.fqdn,
        }
        run([self._script()], env, self.target.timeout, self.secret_values())

    def on(self) -> None:
        self._run("on")

    def off(self) -> None:
        self._run("off")

    def reboot(self) -> None:
        self._run("reboot")
