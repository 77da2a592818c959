#!/usr/bin/env bash
# Install Java 17, which ansible-rulebook (Event-Driven Ansible) needs for its rule engine (Drools, through
# jpy), when missing: Debian's openjdk-17-jre-headless. The rulebook test (tests/e2e/ansible/test_rulebook.py)
# runs the real ansible-rulebook.
set -euo pipefail
# shellcheck source=scripts/lib/debian-packages.sh
. "$(dirname "$0")/lib/debian-packages.sh"
[ "$#" -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
ensure_debian_packages "for ansible-rulebook" openjdk-17-jre-headless
