"""The `virtual` driver: power a simulated machine (lablease.virtual) on and off.

The machine is a separate process in its own session, so it outlives the
worker action that started it and can be killed as a group. Its pid lives in
data_dir/virtual/<fqdn>/pid, so any worker process can find it again.
"""
from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

from . import PowerDriver, PowerError, machines

TRUE = {"true", "yes", "1", "on"}
DEFAULTS = {"boot_delay": 1.0, "install_delay": 2.0}
TERM_GRACE = 2.0
START_WAIT = 10.0  # for a new machine's process to show itself


def truthy(value) -> bool:
    return value is True or str(value).strip().lower() in TRUE


def _seconds(settings: dict, key: str) -> float:
    value = settings.get(key, DEFAULTS[key])
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"power setting {key} must be a number of seconds, not {value!r}") from None
    if not 0 <= seconds <= 3600:
        raise ValueError(f"power setting {key} must be between 0 and 3600 seconds")
    return seconds


def _alive(pid: int, state_dir: Path) -> bool:
    """pid is a simulated machine for this state dir, not a stranger that reused the pid."""
    argv = machines.cmdline(pid)
    return machines.exists(pid) and "lablease.virtual" in argv and str(state_dir) in argv


class VirtualDriver(PowerDriver):
    name = "virtual"

    @classmethod
    def check(cls, settings: dict) -> None:
        super().check(settings)
        for key in DEFAULTS:
            _seconds(settings, key)

    @property
    def state_dir(self) -> Path:
        return machines.state_dir(self.target.data_dir, "virtual", self.target.fqdn, "virtual machine")

    def _locked(self):
        return machines.locked(self.state_dir)

    def _pid(self) -> int | None:
        pid = machines.read_pid(self.state_dir / "pid")
        return pid if pid is not None and _alive(pid, self.state_dir) else None

    def _argv(self) -> list[str]:
        argv = [sys.executable, "-P", "-m", "lablease.virtual", "--fqdn", self.target.fqdn,
                "--tftp-root", str(Path(self.target.tftp_root).absolute()), "--state-dir", str(self.state_dir),
                "--boot-delay", f"{_seconds(self.settings, 'boot_delay'):g}",
                "--install-delay", f"{_seconds(self.settings, 'install_delay'):g}"]
        if self.target.mac:
            argv += ["--mac", self.target.mac]
        if truthy(self.settings.get("fail_install", False)):
            argv.append("--fail-install")
        return argv

    def _start(self) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        pid = machines.spawn(self._argv(), self.state_dir / "console.log", f"virtual machine {self.target.fqdn}", env)
        (self.state_dir / "pid").write_text(f"{pid}\n")
        # Powered on means running: return once the machine is seen as itself, so the state read back
        # right after the command says "on" (a loaded host may show the new process late).
        deadline = time.monotonic() + START_WAIT
        while not _alive(pid, self.state_dir):
            if not machines.exists(pid) or time.monotonic() > deadline:
                raise PowerError(f"virtual machine {self.target.fqdn} did not start (see its console.log)")
            time.sleep(0.02)

    def _stop(self, pid: int) -> None:
        machines.kill_group(pid, ((signal.SIGTERM, TERM_GRACE), (signal.SIGKILL, TERM_GRACE)),
                            f"virtual machine {self.target.fqdn}")

    def on(self) -> None:
        with self._locked():
            if self._pid() is None:
                self._start()

    def off(self) -> None:
        with self._locked():
            pid = self._pid()
            if pid is not None:
                self._stop(pid)
            (self.state_dir / "pid").unlink(missing_ok=True)

    def reboot(self) -> None:
        self.off()
        self.on()

    def status(self) -> str:
        return "off" if self._pid() is None else "on"
