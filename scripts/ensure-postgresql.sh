#!/usr/bin/env bash
# Install PostgreSQL server binaries (Debian's package) when they are missing.
# The test suite starts its own throwaway server from them; nothing is configured here.
set -euo pipefail
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null; then
  echo "PostgreSQL is not installed and this user cannot install it: apt-get install postgresql" >&2
  exit 1
fi
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
echo "installing PostgreSQL (Debian package postgresql) for the test suite..." >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq postgresql >/dev/null
