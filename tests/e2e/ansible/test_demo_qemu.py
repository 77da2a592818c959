"""`make demo-qemu`: the demo's flow on a real QEMU VM, its console shown as it comes, must keep working."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.timeout(300)


def test_the_qemu_demo_leases_installs_uses_and_returns_a_real_vm():
    if shutil.which("qemu-system-x86_64") is None:
        if not os.environ.get("CI"):
            pytest.skip("QEMU is not installed (run `make qemu`, scripts/ensure-qemu.sh)")
        # under CI it must run: install it (and the guest's build tools) rather than skip
        subprocess.run([str(ROOT / "scripts" / "ensure-qemu.sh")], check=True, timeout=600)
    result = subprocess.run([sys.executable, "scripts/demo_qemu.py"], cwd=ROOT, capture_output=True, text=True,
                            timeout=280)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    # the console came through as it was written, in order: firmware, iPXE, installer, second boot from disk
    in_order = ["vm| SeaBIOS", "vm| ipxe/52-54-00-de-0e-01... ok", "vm| lablease-guest: running %pre",
                "vm| lablease-guest: install finished; rebooting", "vm| Booting from SAN device 0x80",
                "vm| lablease-guest: first boot: lablease-postinstall.service finished with exit status 0"]
    positions = [output.find(line) for line in in_order]
    assert -1 not in positions and positions == sorted(positions), (positions, output[-6000:])
    # ... while the playbook ran: the install's lines come before the task that waits for it ends
    assert output.index("vm| lablease-guest: install finished") < output.index("PLAY RECAP"), output[-6000:]
    assert "token=***" in output and "token=" not in output.replace("token=***", ""), "a token was shown"
    for line in ("usage: waiting -> installing", "usage: installing -> running", "netboot_local    completed",
                 "qemu1.lab.test was returned and powered off",
                 "Demo finished: a real VM was leased, installed, used and returned", "server stopped"):
        assert line in output, output[-6000:]
    # no QEMU outlives the demo
    state = str(ROOT / ".lablease-demo-qemu" / "qemu").encode()
    leftovers = [proc.name for proc in Path("/proc").iterdir() if proc.name.isdigit() and state in _cmdline(proc)]
    assert leftovers == [], f"processes of the demo's VMs still running: {leftovers}"


def _cmdline(proc: Path) -> bytes:
    try:
        return (proc / "cmdline").read_bytes()
    except OSError:
        return b""
