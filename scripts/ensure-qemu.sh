#!/usr/bin/env bash
# Install what the real-VM netboot tests need (Debian packages), when missing.
#
#   scripts/ensure-qemu.sh           QEMU with SeaBIOS and its iPXE ROMs, static busybox,
#                                    and the tools that make a FAT boot disk without mounting
#                                    (mkfs.fat, mtools, syslinux)
#   scripts/ensure-qemu.sh --extra   also PXELINUX, GRUB2 (BIOS and UEFI) and OVMF
#
# Quiet and fast when everything is there; `apt-get update` only when an install fails first.
# Nothing is configured, and the guest kernel is not installed: tests/support/guest.py
# downloads and unpacks it into .cache/guest/.
set -euo pipefail

packages=(qemu-system-x86 ipxe-qemu seabios busybox-static mtools dosfstools syslinux)
case "${1:-}" in
  "") ;;
  --extra) packages+=(syslinux-common pxelinux grub-pc-bin grub-efi-amd64-bin ovmf) ;;
  *) echo "usage: $0 [--extra]" >&2; exit 2 ;;
esac

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${db:Status-Status}' "$package" 2>/dev/null || true)
  [ "$status" = installed ] || missing+=("$package")
done
[ "${#missing[@]}" -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ] && ! command -v sudo >/dev/null; then
  echo "missing Debian packages for the VM tests, and this user cannot install them:" \
       "apt-get install --no-install-recommends ${missing[*]}" >&2
  exit 1
fi
SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
install() {
  # Another apt-get may be running (a concurrent test run): wait for its lock instead of failing.
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends \
    -o DPkg::Lock::Timeout=300 "${missing[@]}" >/dev/null 2>"$log"
}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
echo "installing ${missing[*]} (Debian packages) for the VM tests..." >&2
if ! install; then
  $SUDO apt-get update -qq -o DPkg::Lock::Timeout=300 >/dev/null 2>>"$log" || true
  if ! install; then
    cat "$log" >&2
    echo "could not install ${missing[*]}: see apt-get's messages above" >&2
    exit 1
  fi
fi
