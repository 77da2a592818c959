#!/usr/bin/env bash
# Install what the real Beaker client needs to build (Debian packages), when missing.
#
#   scripts/ensure-beaker-client.sh    Kerberos headers and krb5-config (libkrb5-dev), a C compiler and
#                                      Python's headers: beaker-client 29.3 depends on gssapi, which PyPI
#                                      ships for Linux as source only.
#
# The client itself goes into a venv of its own (.venv/tools/beaker-client, the Makefile's tools pattern).
set -euo pipefail
# shellcheck source=scripts/lib/debian-packages.sh
. "$(dirname "$0")/lib/debian-packages.sh"
[ "$#" -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
ensure_debian_packages "to build the Beaker client" libkrb5-dev gcc python3-dev
