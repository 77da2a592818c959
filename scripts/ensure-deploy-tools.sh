#!/usr/bin/env bash
# Install the tools that check the deployment files in deploy/ (tests/e2e/test_deploy_files.py), when missing:
# systemd-analyze (systemd), nginx (nginx-light), docker-compose (Debian's, which validates a compose file
# without a container engine; its recommended docker.io is not installed) and openssl. Debian packages.
set -euo pipefail
missing=()
command -v systemd-analyze >/dev/null || missing+=(systemd)
command -v nginx >/dev/null || [ -x /usr/sbin/nginx ] || missing+=(nginx-light)
command -v docker-compose >/dev/null || missing+=(docker-compose)
command -v openssl >/dev/null || missing+=(openssl)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null; then
  echo "missing ${missing[*]} and this user cannot install them: apt-get install ${missing[*]}" >&2
  exit 1
fi
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
echo "installing ${missing[*]} (Debian packages) for the deployment file tests..." >&2
$SUDO apt-get update -qq
# policy-rc.d: the nginx package must not start a server on this machine (the test only runs nginx -t).
if [ ! -e /usr/sbin/policy-rc.d ]; then
  $SUDO sh -c 'printf "#!/bin/sh\nexit 101\n" > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d'
  trap '$SUDO rm -f /usr/sbin/policy-rc.d' EXIT
fi
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
