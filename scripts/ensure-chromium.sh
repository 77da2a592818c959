#!/usr/bin/env bash
# Install Debian's chromium when it is missing: the browser tests (tests/e2e/web) drive it with Playwright.
# Playwright's own browser download is never used (`playwright install` is not run): its driver launches
# /usr/bin/chromium (tests/e2e/web/conftest.py).
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null; then
  echo "chromium is not installed and this user cannot install it: apt-get install chromium" >&2
  exit 1
fi
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
echo "installing chromium (Debian package) for the browser tests..." >&2
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
