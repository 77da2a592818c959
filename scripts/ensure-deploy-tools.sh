#!/usr/bin/env bash
# Install the tools that check the deployment files in deploy/ (tests/e2e/test_deploy_files.py), when missing:
# systemd-analyze (systemd), nginx (nginx-light; its server is not started, the test only runs nginx -t),
# docker-compose (Debian's, which validates a compose file without a container engine; its recommended
# docker.io is not installed) and openssl. Debian packages.
set -euo pipefail
# shellcheck source=scripts/lib/debian-packages.sh
. "$(dirname "$0")/lib/debian-packages.sh"
[ "$#" -eq 0 ] || { echo "usage: $0" >&2; exit 2; }
missing=()
command -v systemd-analyze >/dev/null || missing+=(systemd)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
command -v docker-compose >/dev/null || missing+=(docker-compose)
command -v openssl >/dev/null || missing+=(openssl)
[ "${#missing[@]}" -eq 0 ] || install_debian_packages "for the deployment file tests" "${missing[@]}"
