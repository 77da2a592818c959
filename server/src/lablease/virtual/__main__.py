"""`python -m lablease.virtual`: run one simulated machine until SIGTERM (what the virtual driver starts)."""
from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from .machine import Machine, PoweredOff, Unplugged


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m lablease.virtual",
        description="A simulated lab machine: netboots from the TFTP root's iPXE script, installs by calling "
                    "the kickstart's callbacks, then runs until SIGTERM. Logs each step to stdout.")
    parser.add_argument("--fqdn", required=True, help="the system's name (for the log)")
    parser.add_argument("--mac", help="netboot MAC; without one the machine only boots its local disk")
    parser.add_argument("--tftp-root", required=True, type=Path, help="where <root>/ipxe/<mac> is read")
    parser.add_argument("--state-dir", required=True, type=Path, help="the machine's disk: first-boot marker")
    parser.add_argument("--boot-delay", type=float, default=1.0, help="seconds firmware takes (default 1)")
    parser.add_argument("--install-delay", type=float, default=2.0, help="seconds an install takes (default 2)")
    parser.add_argument("--fail-install", action="store_true", help="call install_fail instead of install_done")
    return parser.parse_args(argv)


def power_off(signum, frame):
    raise PoweredOff()


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    machine = Machine(args.fqdn, args.mac, args.tftp_root, args.state_dir,
                      args.boot_delay, args.install_delay, args.fail_install)
    signal.signal(signal.SIGTERM, power_off)
    try:
        machine.run()
    except PoweredOff:
        machine.log("power off")
    except Unplugged:
        machine.log("state dir or TFTP root is gone: power off")
    except KeyboardInterrupt:
        machine.log("interrupted: power off")
    return 0


if __name__ == "__main__":
    sys.exit(main())
