#!/usr/bin/env bash
# Run ansible-test on the collection exactly as it ships.
#
# ansible-test needs the collection at .../ansible_collections/lablease/lab and
# refuses symlinked trees. Copying the checkout would also lint what is not
# the collection (server/, .venv/, caches). So we build the artifact with
# `ansible-galaxy collection build` -- which applies galaxy.yml's build_ignore
# -- and extract it into a temporary ansible_collections tree: sanity and unit
# tests see precisely the files users install.
#
#   scripts/ansible-test.sh sanity --venv --python 3.11
#   scripts/ansible-test.sh units --venv --python 3.11
#   ANSIBLE_CORE_VENV=.venv/tools/ansible-core-2.16 scripts/ansible-test.sh sanity --venv --python 3.11
#
# ANSIBLE_CORE_VENV picks the ansible-core branch: the venv whose ansible-test
# runs (default .venv, the newest branch this Python runs).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "${ANSIBLE_CORE_VENV:-$root/.venv}" && pwd)/bin
work=$(mktemp -d "${TMPDIR:-/tmp}/lablease-ansible-test.XXXXXX")
cleanup() { rm -rf "$work"; }
trap cleanup EXIT

"$bin/python" "$root/scripts/ansible_test_offline.py"
"$bin/ansible-galaxy" collection build --force --output-path "$work" "$root" >/dev/null
tree="$work/ansible_collections/lablease/lab"
mkdir -p "$tree"
tar -xzf "$work"/lablease-lab-*.tar.gz -C "$tree"

status=0
(cd "$tree" && PATH="$bin:$PATH" "$bin/ansible-test" "$@" --color no) || status=$?
if [ -d "$tree/tests/output" ]; then
    mkdir -p "$root/tests/output"
    cp -r "$tree/tests/output/." "$root/tests/output/"
fi
exit "$status"
