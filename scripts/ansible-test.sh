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
venv=$(cd "${ANSIBLE_CORE_VENV:-$root/.venv}" && pwd)
bin=$venv/bin
# The tree is rebuilt from the artifact on every run; only ansible-test's own delegation venv
# (tests/output/.tmp/delegation, made and marked by ansible-test) is kept between runs, one per ansible-core
# branch (sanity and units share it), so each run does not create a venv and install its requirements again.
# It lives outside the checkout: inside a git work tree ansible-test lists files with git, and would see none.
cache="${XDG_CACHE_HOME:-$HOME/.cache}/lablease/ansible-test"
work="$cache/$(printf '%s' "$root" | sha256sum | cut -c1-12)-$(basename "$venv")"
tree="$work/ansible_collections/lablease/lab"
keep="$work/delegation"
mkdir -p "$work"
# One run at a time per tree (a second `make` in the same checkout waits).
exec 9>"$work.lock"
flock 9
[ ! -d "$tree/tests/output/.tmp/delegation" ] || mv "$tree/tests/output/.tmp/delegation" "$keep"
rm -rf "$work/ansible_collections" "$work"/lablease-lab-*.tar.gz

"$bin/python" "$root/scripts/ansible_test_offline.py" "$root/.venv/bin/uv"
"$bin/ansible-galaxy" collection build --force --output-path "$work" "$root" >/dev/null
mkdir -p "$tree"
tar -xzf "$work"/lablease-lab-*.tar.gz -C "$tree"
if [ -d "$keep" ]; then
    mkdir -p "$tree/tests/output/.tmp"
    mv "$keep" "$tree/tests/output/.tmp/delegation"
fi

status=0
(cd "$tree" && PATH="$bin:$PATH" "$bin/ansible-test" "$@" --color no) || status=$?
# The results (not ansible-test's venvs in .tmp) go where a user looks for them.
if [ -d "$tree/tests/output" ]; then
    mkdir -p "$root/tests/output"
    find "$tree/tests/output" -mindepth 1 -maxdepth 1 ! -name .tmp -exec cp -r {} "$root/tests/output/" \;
fi
exit "$status"
