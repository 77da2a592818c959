#!/usr/bin/env bash
# Install what the power drivers are tested against (Debian packages), when missing:
#   OpenIPMI's BMC simulator ipmi_sim (openipmi) and ipmitool itself, which the ipmitool driver runs;
#   libvirtd with QEMU (libvirt-daemon-system) and virsh (libvirt-clients), for the libvirt driver and
#   sushy-emulator's libvirt backend, whose Python binding (libvirt-python, in sushy-tools' venv) is
#   built against libvirt-dev with gcc and pkg-config.
#
# Quiet and fast when everything is there; `apt-get update` only when an install fails first.
# Nothing is configured or started: tests/support/bmc.py writes ipmi_sim's lan.conf and emu file for each
# run, and starts libvirtd when it is not running (tests/e2e/test_libvirt_e2e.py).
# (sushy-tools' Redfish emulator is a Python tool: `make bmc` installs it into .venv/tools/sushy-tools.)
set -euo pipefail

packages=(openipmi ipmitool libvirt-daemon-system libvirt-clients libvirt-dev pkg-config gcc)
[ "$#" -eq 0 ] || { echo "usage: $0" >&2; exit 2; }

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || true)
  [ "$status" = installed ] || missing+=("$package")
done
[ "${#missing[@]}" -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null; then
  echo "missing Debian packages for the BMC tests, and this user cannot install them:" \
       "apt-get install --no-install-recommends ${missing[*]}" >&2
  exit 1
fi
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
install() {
  # Another apt-get may be running (a concurrent test run): wait for its lock instead of failing.
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    -o DPkg::Lock::Timeout=300 "${missing[@]}" >/dev/null 2>"$log"
}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "installing ${missing[*]} (Debian packages) for the BMC tests..." >&2
if ! install; then
  $SUDO apt-get update -qq -o DPkg::Lock::Timeout=300 >/dev/null 2>>"$log" || true
  if ! install; then
    cat "$log" >&2
    echo "could not install ${missing[*]}: see apt-get's messages above" >&2
    exit 1
  fi
fi
