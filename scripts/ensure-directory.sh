#!/usr/bin/env bash
# Install what the directory and Kerberos sign-in tests need (Debian packages), when missing:
# OpenLDAP's slapd and ldap-utils (slapadd), MIT Kerberos' KDC, kadmin.local and kinit, and the
# headers the `gssapi` Python package builds against (libkrb5-dev).
#
# Nothing is configured or left running (the packages' own slapd and KDC are not started): the suite
# starts its own slapd and krb5kdc with throw-away configuration (tests/support/directory.py,
# tests/support/kerberos.py).
set -euo pipefail
# shellcheck source=scripts/lib/debian-packages.sh
. "$(dirname "$0")/lib/debian-packages.sh"
[ "$#" -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
ensure_debian_packages "for the directory tests" \
  slapd ldap-utils krb5-kdc krb5-admin-server krb5-user libkrb5-dev
