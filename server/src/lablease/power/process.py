"""Running a power tool as a subprocess that cannot hang the worker or leak a password.

Secrets travel only in environment variables: a command line is readable by
every user on the host (/proc/<pid>/cmdline, ps). The tool runs in its own
process group, so a timeout kills it together with anything it started.
"""
from __future__ import annotations

import os
import signal
import subprocess

from . import PowerError, scrub

TAIL_LINES = 5


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass  # the group is already gone


def _reap(process: subprocess.Popen) -> None:
    try:
        process.communicate(timeout=5)
    except subprocess.TimeoutExpired:  # something left the group holding our pipes: stop reading them
        process.stdout.close()
        process.stderr.close()
        process.wait()


def _tail(stdout: str, stderr: str) -> str:
    lines = (stderr.strip() or stdout.strip()).splitlines()
    return " | ".join(lines[-TAIL_LINES:]) or "no output"


def run(argv: list[str], env_extra: dict, timeout: float, secrets: list[str]) -> str:
    """stdout of argv; PowerError (secrets as ***) on a timeout, a missing program or a non-zero exit."""
    argv = [str(arg) for arg in argv]
    if any(secret and str(secret) in arg for secret in secrets for arg in argv):
        raise PowerError(f"refusing to run {argv[0]}: a secret would be on its command line")
    env = {**os.environ, **{key: str(value) for key, value in env_extra.items()}}
    try:
        process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   env=env, text=True, errors="replace", start_new_session=True)
    except OSError as error:
        raise PowerError(scrub(f"cannot run {argv[0]}: {error.strerror or error}", secrets)) from None
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process.pid)  # not yet reaped, so the group id cannot name someone else's group
        _reap(process)
        raise PowerError(f"{argv[0]} timed out after {timeout:g} s") from None
    if process.returncode != 0:
        how = f"was killed by signal {-process.returncode}" if process.returncode < 0 else \
            f"exited with status {process.returncode}"
        raise PowerError(scrub(f"{argv[0]} {how}: {_tail(stdout, stderr)}", secrets))
    return stdout
