"""The `virtual` driver: power a simulated machine (lablease.virtual) on and off.

The machine is a separate process in its own session, so it outlives the
worker action that started it and can be killed as a group. Its pid lives in
data_dir/virtual/<fqdn>/pid, so any worker process can find it again.
"""
from __future__ import annotations

import fcntl
import os
import signal
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from . import PowerDriver, PowerError

TRUE = {"true", "yes", "1", "on"}
DEFAULTS = {"boot_delay": 1.0, "install_delay": 2.0}
TERM_GRACE = 2.0


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


def _exists(pid: int) -> bool:
    """pid is a process that has not finished exiting (a zombie has: it only waits for its parent)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _alive(pid: int, state_dir: Path) -> bool:
    """pid is a simulated machine for this state dir, not a stranger that reused the pid."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")
    except OSError:
        return False
    return _exists(pid) and "lablease.virtual" in argv and str(state_dir) in argv


def _reap_later(pid: int) -> None:
    """Wait for the child in a thread, so a machine that dies is not left a zombie of the worker."""
    def reap():
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass  # somebody else reaped it first
    threading.Thread(target=reap, name=f"reap-{pid}", daemon=True).start()


class VirtualDriver(PowerDriver):
    name = "virtual"

    @classmethod
    def check(cls, settings: dict) -> None:
        super().check(settings)
        for key in DEFAULTS:
            _seconds(settings, key)

    @property
    def state_dir(self) -> Path:
        fqdn = self.target.fqdn
        if "/" in fqdn or fqdn.startswith("."):
            raise PowerError(f"{fqdn!r} cannot name a virtual machine's directory")
        # Absolute, because the machine runs on after the worker, and _alive compares it with the machine's argv.
        return (Path(self.target.data_dir) / "virtual" / fqdn).absolute()

    @contextmanager
    def _locked(self):
        """One power action per machine at a time, across threads and worker processes."""
        self.state_dir.mkdir(parents=True, exist_ok=True)
        with open(self.state_dir / "lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            yield

    def _pid(self) -> int | None:
        try:
            pid = int((self.state_dir / "pid").read_text().strip())
        except (OSError, ValueError):
            return None
        return pid if _alive(pid, self.state_dir) else None

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
        argv = self._argv()
        log = str(self.state_dir / "console.log")
        actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
                   (os.POSIX_SPAWN_OPEN, 1, log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644),
                   (os.POSIX_SPAWN_DUP2, 1, 2)]
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        try:
            # posix_spawn, not Popen: a Popen dropped while its child runs warns, and the machine must outlive us.
            pid = os.posix_spawn(argv[0], argv, env, file_actions=actions, setsid=True)
        except OSError as error:
            raise PowerError(f"cannot start virtual machine {self.target.fqdn}: {error}") from None
        _reap_later(pid)
        (self.state_dir / "pid").write_text(f"{pid}\n")

    def _stop(self, pid: int) -> None:
        for sig, wait in ((signal.SIGTERM, TERM_GRACE), (signal.SIGKILL, TERM_GRACE)):
            try:
                os.killpg(pid, sig)
            except ProcessLookupError:
                return
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline:
                if not _exists(pid):  # not _alive: an exiting process loses its cmdline before it is gone
                    return
                time.sleep(0.05)
        raise PowerError(f"virtual machine {self.target.fqdn} (pid {pid}) survived SIGKILL")

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
