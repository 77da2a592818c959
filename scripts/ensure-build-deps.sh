#!/usr/bin/env bash
# Install what the Python packages built from source need (Debian packages), when missing.
#
#   scripts/ensure-build-deps.sh    Kerberos headers and krb5-config (libkrb5-dev), a C compiler and
#                                   Python's headers: gssapi, which the server (Kerberos sign-in), the real
#                                   Beaker client and mrack depend on, is on PyPI for Linux as source only.
#
# Run by `make venv` before .venv and the tool venvs are built.
set -euo pipefail
# shellcheck source=scripts/lib/debian-packages.sh
. "$(dirname "$0")/lib/debian-packages.sh"
[ "$#" -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
ensure_debian_packages "to build gssapi" libkrb5-dev gcc python3-dev
