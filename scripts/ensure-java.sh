#!/usr/bin/env bash
# Install Java 17, which ansible-rulebook (Event-Driven Ansible) needs for its rule engine (Drools, through
# jpy), when missing: Debian's openjdk-17-jre-headless. The rulebook test (tests/e2e/ansible/test_rulebook.py)
# runs the real ansible-rulebook.
#
# Quiet and fast when it is there; `apt-get update` only when an install fails first.
set -euo pipefail

packages=(openjdk-17-jre-headless)

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || true)
  [ "$status" = installed ] || missing+=("$package")
done
[ "${#missing[@]}" -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null; then
  echo "missing Java 17 for ansible-rulebook, and this user cannot install it:" \
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
echo "installing ${missing[*]} (Debian packages) for ansible-rulebook..." >&2
if ! install; then
  $SUDO apt-get update -qq -o DPkg::Lock::Timeout=300 >/dev/null 2>>"$log" || true
  if ! install; then
    cat "$log" >&2
    echo "could not install ${missing[*]}: see apt-get's messages above" >&2
    exit 1
  fi
fi
