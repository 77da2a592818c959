#!/usr/bin/env bash
# Install Debian's chromium when it is missing: the browser tests (tests/e2e/web) drive it with Playwright.
# Playwright's own browser download is never used (`playwright install` is not run): its driver launches
# /usr/bin/chromium (tests/e2e/web/conftest.py).
set -euo pipefail
# shellcheck source=scripts/lib/debian-packages.sh
. "$(dirname "$0")/lib/debian-packages.sh"
[ "$#" -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
[ -x /usr/bin/chromium ] || install_debian_packages "for the browser tests" chromium
