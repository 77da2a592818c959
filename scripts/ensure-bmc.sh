#!/usr/bin/env bash
# Install what the power drivers are tested against (Debian packages), when missing:
#   OpenIPMI's BMC simulator ipmi_sim (openipmi) and ipmitool itself, which the ipmitool driver runs;
#   libvirtd with QEMU (libvirt-daemon-system) and virsh (libvirt-clients), for the libvirt driver and
#   sushy-emulator's libvirt backend, whose Python binding (libvirt-python, in sushy-tools' venv) is
#   built against libvirt-dev with gcc and pkg-config.
#
# Nothing is configured or started: tests/support/bmc.py writes ipmi_sim's lan.conf and emu file for each
# run, and starts libvirtd when it is not running (tests/e2e/test_libvirt_e2e.py).
# (sushy-tools' Redfish emulator is a Python tool: `make bmc` installs it into .venv/tools/sushy-tools.)
set -euo pipefail
# shellcheck source=scripts/lib/debian-packages.sh
. "$(dirname "$0")/lib/debian-packages.sh"
[ "$#" -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
ensure_debian_packages "for the BMC tests" \
  openipmi ipmitool libvirt-daemon-system libvirt-clients libvirt-dev pkg-config gcc
