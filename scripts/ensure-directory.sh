#!/usr/bin/env bash
# Install what the directory and Kerberos sign-in tests need (Debian packages), when missing:
# OpenLDAP's slapd and ldap-utils (slapadd), MIT Kerberos' KDC, kadmin.local and kinit, and the
# headers the `gssapi` Python package builds against (libkrb5-dev).
#
# Quiet and fast when everything is there; `apt-get update` only when an install fails first.
# Nothing is configured or left running: the suite starts its own slapd and krb5kdc with throw-away
# configuration (tests/support/directory.py, tests/support/kerberos.py).
set -euo pipefail

packages=(slapd ldap-utils krb5-kdc krb5-admin-server krb5-user libkrb5-dev)
[ "$#" -eq 0 ] || { echo "usage: $0" >&2; exit 2; }

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || true)
  [ "$status" = installed ] || missing+=("$package")
done
[ "${#missing[@]}" -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null; then
  echo "missing Debian packages for the directory tests, and this user cannot install them:" \
       "apt-get install --no-install-recommends ${missing[*]}" >&2
  exit 1
fi
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
install() {
  # Another apt-get may be running (a concurrent test run): wait for its lock instead of failing.
  # RUNLEVEL=1 keeps the packages' init scripts from starting the system's own slapd and KDC.
  DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 $SUDO apt-get install -y -qq --no-install-recommends \
    -o DPkg::Lock::Timeout=300 "${missing[@]}" >/dev/null 2>"$log"
}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "installing ${missing[*]} (Debian packages) for the directory tests..." >&2
if ! install; then
  $SUDO apt-get update -qq -o DPkg::Lock::Timeout=300 >/dev/null 2>>"$log" || true
  if ! install; then
    cat "$log" >&2
    echo "could not install ${missing[*]}: see apt-get's messages above" >&2
    exit 1
  fi
fi
