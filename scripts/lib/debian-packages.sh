# shellcheck shell=bash
# Sourced by scripts/ensure-*.sh: install Debian packages the test suite needs, when missing.
#
#   ensure_debian_packages "for the VM tests" qemu-system-x86 busybox-static ...
#
# Quiet and fast when everything is there; `apt-get update` only when an install fails first (a fresh
# machine's package lists may be stale or empty). Packages never start their daemons here (a throw-away
# policy-rc.d and RUNLEVEL=1): the suite starts its own slapd, KDC, PostgreSQL, libvirtd with throw-away
# configuration. Another apt-get may be running (a concurrent test run): its lock is waited for.

missing_debian_packages() {
  local package status
  for package in "$@"; do
    status=$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || true)
    [ "$status" = installed ] || printf '%s\n' "$package"
  done
}

ensure_debian_packages() {
  local purpose=$1; shift
  local missing
  mapfile -t missing < <(missing_debian_packages "$@")
  [ "${#missing[@]}" -eq 0 ] && return 0
  install_debian_packages "$purpose" "${missing[@]}"
}

# Installs the packages named (the caller has decided they are missing).
install_debian_packages() {
  local purpose=$1; shift
  local sudo="" log status=0
  if [ "$(id -u)" != 0 ]; then
    if ! command -v sudo >/dev/null; then
      echo "missing Debian packages $purpose, and this user cannot install them:" \
           "apt-get install --no-install-recommends $*" >&2
      return 1
    fi
    sudo=sudo
  fi
  echo "installing $* (Debian packages) $purpose..." >&2
  log=$(mktemp)
  local made_policy=""
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    $sudo sh -c 'printf "#!/bin/sh\nexit 101\n" > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d'
    made_policy=yes
  fi
  if ! _apt_install "$sudo" "$log" "$@"; then
    $sudo apt-get update -qq -o DPkg::Lock::Timeout=300 >/dev/null 2>>"$log" || true
    _apt_install "$sudo" "$log" "$@" || status=$?
  fi
  [ -z "$made_policy" ] || $sudo rm -f /usr/sbin/policy-rc.d
  if [ "$status" != 0 ]; then
    cat "$log" >&2
    echo "could not install $*: see apt-get's messages above" >&2
  fi
  rm -f "$log"
  return "$status"
}

_apt_install() {
  local sudo=$1 log=$2; shift 2
  DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 $sudo apt-get install -y -qq --no-install-recommends \
    -o DPkg::Lock::Timeout=300 "$@" >/dev/null 2>>"$log"
}
