#!/usr/bin/env bash
# Install what the real Beaker client needs to build (Debian packages), when missing.
#
#   scripts/ensure-beaker-client.sh    Kerberos headers and krb5-config (libkrb5-dev), a C compiler and
#                                      Python's headers: beaker-client 29.3 depends on gssapi, which PyPI
#                                      ships for Linux as source only.
#
# Quiet and fast when everything is there; `apt-get update` only when an install fails first. The client
# itself goes into a venv of its own (.venv/tools/beaker-client, the Makefile's tools pattern).
set -euo pipefail

packages=(libkrb5-dev gcc python3-dev)
[ "$#" -eq 0 ] || { echo "usage: $0" >&2; exit 2; }

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || true)
  [ "$status" = installed ] || missing+=("$package")
done
[ "${#missing[@]}" -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null; then
  echo "missing Debian packages to build the Beaker client, and this user cannot install them:" \
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
echo "installing ${missing[*]} (Debian packages) to build the Beaker client..." >&2
if ! install; then
  $SUDO apt-get update -qq -o DPkg::Lock::Timeout=300 >/dev/null 2>>"$log" || true
  if ! install; then
    cat "$log" >&2
    echo "could not install ${missing[*]}: see apt-get's messages above" >&2
    exit 1
  fi
fi
