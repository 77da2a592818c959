#!/usr/bin/env bash
# Install what the real-VM netboot tests need (Debian packages), when missing.
#
#   scripts/ensure-qemu.sh           QEMU with SeaBIOS and its iPXE ROMs, static busybox,
#                                    and the tools that make a FAT boot disk without mounting
#                                    (mkfs.fat, mtools, syslinux)
#   scripts/ensure-qemu.sh --extra   also PXELINUX, GRUB2 (BIOS and UEFI) and OVMF
#
# Nothing is configured, and the guest kernel is not installed: tests/support/guest.py
# downloads and unpacks it into .cache/guest/.
set -euo pipefail
# shellcheck source=scripts/lib/debian-packages.sh
. "$(dirname "$0")/lib/debian-packages.sh"

packages=(qemu-system-x86 ipxe-qemu seabios busybox-static mtools dosfstools syslinux)
case "${1:-}" in
  "") ;;
  --extra) packages+=(syslinux-common pxelinux grub-pc-bin grub-efi-amd64-bin ovmf) ;;
  *) echo "usage: $0 [--extra]" >&2; exit 2 ;;
esac
ensure_debian_packages "for the VM tests" "${packages[@]}"
