"""Machine processes that outlive the worker: the `virtual` and `qemu` drivers share these.

A machine is a process spawned in its own session (so it is its own process
group, and killing the group kills everything it started), recorded in a pid
file under its state dir, reaped by a thread of the process that started it,
and recognised again by its command line, so a pid reused by a stranger is
never taken for the machine. Power actions on one machine are serialised by a
file lock in its state dir, across threads and worker processes.
"""
from __future__ import annotations

import fcntl
import os
import signal
import threading
import time
from contextlib import contextmanager
from pathlib import Path

from . import PowerError


def state_dir(data_dir: Path, kind: str, fqdn: str, what: str) -> Path:
    """data_dir/<kind>/<fqdn>, absolute: the machine runs on after the worker, and its argv names it."""
    if not fqdn or "/" in fqdn or "\0" in fqdn or fqdn.startswith("."):
        raise PowerError(f"{fqdn!r} cannot name a {what}'s directory")
    return (Path(data_dir) / kind / fqdn).absolute()


@contextmanager
def locked(directory: Path):
    """One power action per machine at a time, across threads and worker processes."""
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def exists(pid: int) -> bool:
    """pid is a process that has not finished exiting (a zombie has: it only waits for its parent)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def cmdline(pid: int) -> list[str]:
    """pid's argv; empty when it is gone (or exiting: an exiting process loses its cmdline first)."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return raw.decode(errors="replace").split("\0")[:-1] if raw else []


def read_pid(path: Path) -> int | None:
    try:
        pid = int(path.read_text().strip())
    except (OSError, ValueError):
        return None
    return pid if pid > 0 else None


def reap_later(pid: int) -> None:
    """Wait for the child in a thread, so a machine that dies is not left a zombie of the worker."""
    def reap():
        try:
            os.waitpid(pid, 0)
        except ChildProcessError:
            pass  # somebody else reaped it first
    threading.Thread(target=reap, name=f"reap-{pid}", daemon=True).start()


def spawn(argv: list[str], log: Path, what: str, env: dict | None = None, truncate: bool = False) -> int:
    """Start argv in a session of its own, stdin from /dev/null, stdout and stderr to log; its pid."""
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if truncate else os.O_APPEND)
    actions = [(os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
               (os.POSIX_SPAWN_OPEN, 1, str(log), flags, 0o644),
               (os.POSIX_SPAWN_DUP2, 1, 2)]
    try:
        # posix_spawn, not Popen: a Popen dropped while its child runs warns, and the machine must outlive us.
        pid = os.posix_spawn(argv[0], argv, os.environ if env is None else env, file_actions=actions, setsid=True)
    except OSError as error:
        raise PowerError(f"cannot start {what}: {error}") from None
    reap_later(pid)
    return pid


def wait_gone(pid: int, timeout: float) -> bool:
    """True once pid has exited (within timeout)."""
    deadline = time.monotonic() + timeout
    while exists(pid):  # not a cmdline check: an exiting process loses its cmdline before it is gone
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)
    return True


def kill_group(pid: int, steps, what: str) -> None:
    """Signal the process group led by pid with each (signal, grace seconds) in turn until pid is gone."""
    for sig, grace in steps:
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            return
        if wait_gone(pid, grace):
            return
    raise PowerError(f"{what} (pid {pid}) survived {signal.Signals(steps[-1][0]).name}")
