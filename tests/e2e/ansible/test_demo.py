"""`make demo` is what a new user runs first: it must keep working, end to end."""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def test_the_demo_leases_installs_uses_and_returns_a_system():
    result = subprocess.run([sys.executable, "scripts/demo.py"], cwd=ROOT, capture_output=True, text=True,
                            timeout=300, stdin=subprocess.DEVNULL)  # not a terminal: it does not wait for Enter
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-4000:]
    for line in ("usage: waiting -> installing", "usage: installing -> running", "postinstall_done: POST",
                 "vm1.lab.test was returned and powered off",
                 "Demo finished: the system was leased, installed, used and returned",
                 "and sign in as user 'demo' with password"):
        assert line in output, output[-4000:]


# The part of the demo that decides whether to wait (show_the_pages), run on a real terminal: a pseudo-terminal
# from the pty module, made the child's controlling terminal, so Ctrl-C goes through the terminal's line
# discipline as it does for a person. Cheap (no server, no playbook): the whole demo's run above covers the rest.
SHOW_THE_PAGES = ("import sys; sys.path.insert(0, 'scripts'); import demo; "
                  "demo.show_the_pages('http://127.0.0.1:8999'); print('the demo went on')")
PROMPT = b"press Enter (or Ctrl-C) to stop it"


def on_a_terminal():
    import fcntl
    import os
    import pty
    import termios

    import signal

    def as_on_a_terminal():
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # a run started in the background ignores Ctrl-C; a person's does not
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    controller, terminal = pty.openpty()
    process = subprocess.Popen([sys.executable, "-c", SHOW_THE_PAGES], cwd=ROOT, stdin=terminal, stdout=terminal,
                               stderr=terminal, start_new_session=True, preexec_fn=as_on_a_terminal)
    os.close(terminal)
    return process, controller


def read_until(controller: int, wanted: bytes, timeout: float = 30) -> bytes:
    import os
    import select

    seen = b""
    while wanted not in seen:
        ready, _, _ = select.select([controller], [], [], timeout)
        assert ready, f"waited {timeout} s for {wanted!r}; the terminal showed {seen!r}"
        try:
            seen += os.read(controller, 4096)
        except OSError:  # the child closed the terminal
            break
    return seen


@pytest.mark.parametrize("key", [b"\r", b"\x03"], ids=["enter", "ctrl-c"])
def test_on_a_terminal_the_demo_waits_for_enter_or_ctrl_c(key):
    import os

    process, controller = on_a_terminal()
    try:
        shown = read_until(controller, PROMPT)
        assert b"sign in as user 'demo' with password" in shown
        assert process.poll() is None  # the prompt is up and the demo has not gone on: it waits for the key
        os.write(controller, key)
        assert b"the demo went on" in read_until(controller, b"the demo went on")
        assert process.wait(timeout=30) == 0  # Ctrl-C too ends the wait, not the demo (its server still stops)
    finally:
        process.kill()
        process.wait()
        os.close(controller)


def test_not_on_a_terminal_the_demo_does_not_wait():
    result = subprocess.run([sys.executable, "-c", SHOW_THE_PAGES], cwd=ROOT, capture_output=True, text=True,
                            timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    assert "sign in as user 'demo'" in result.stdout and "the demo went on" in result.stdout
    assert "press Enter" not in result.stdout
