#!/usr/bin/env bash
# Install PostgreSQL server binaries (Debian's package) when they are missing.
# The test suite starts its own throw-away servers from them; nothing is configured or started here.
set -euo pipefail
# shellcheck source=scripts/lib/debian-packages.sh
. "$(dirname "$0")/lib/debian-packages.sh"
[ "$#" -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || install_debian_packages "for the test suite" postgresql
