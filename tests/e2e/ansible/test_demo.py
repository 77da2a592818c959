"""`make demo` is what a new user runs first: it must keep working, end to end."""
import subprocess
import sys
from pathlib import Path

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
