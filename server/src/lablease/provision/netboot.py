"""Netboot files in a lab's TFTP root: what a machine's boot loader does on its next network boot.

One file per MAC address and boot loader; no database. An install image
boots the kernel and initrd by URL; `None` boots the local disk, which is
written once installation is done so the machine does not reinstall forever.

Locations inside the TFTP root, the MAC lower-case and hyphenated:

- iPXE: `ipxe/52-54-00-12-34-56`, reached through the dispatcher `boot.ipxe`
  (firmware or DHCP points at it; it chains to the per-MAC script, or exits
  to the next boot device when there is none);
- PXELINUX: `pxelinux.cfg/01-52-54-00-12-34-56`. The kernel and initrd are
  URLs, so the lab must serve lpxelinux.0 (the PXELINUX that speaks HTTP),
  and chain.c32 with its libraries for local boot;
- GRUB2: `boot/grub/grub.cfg-01-52-54-00-12-34-56`, under grub-mknetdir's
  default prefix. GRUB fetches `http://` and `tftp://` URLs only, as
  `(http,host)/path`.

Every file is replaced atomically (a temporary file in the same directory,
fsync, os.replace), so a machine booting meanwhile reads the old file or the
new one, never half of one.
"""
from __future__ import annotations

import os
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from ..domain.boot_text import unfit_for_a_line

LOADERS = ("ipxe", "pxelinux", "grub2")
DISPATCHER = "boot.ipxe"
DISPATCHER_SCRIPT = "#!ipxe\nchain ipxe/${net0/mac:hexhyp} || exit\n"
# The spellings a MAC arrives in (inventories, DHCP configs, `ip link`, switches): pairs joined by colons or
# hyphens, twelve digits, or Cisco's three dotted groups of four; one separator throughout.
_MAC = re.compile(r"[0-9a-f]{2}([:-])[0-9a-f]{2}(\1[0-9a-f]{2}){4}|[0-9a-f]{12}|[0-9a-f]{4}(\.[0-9a-f]{4}){2}")


@dataclass(frozen=True)
class BootImage:
    kernel_url: str
    initrd_url: str
    kernel_options: str  # the whole command line, e.g. "inst.ks=http://... console=ttyS0"

    def __post_init__(self):
        # These go into boot loader scripts line by line: a newline would be a command of its own.
        for name in ("kernel_url", "initrd_url", "kernel_options"):
            if (why := unfit_for_a_line(getattr(self, name))) is not None:
                raise ValueError(f"{name} {why}")


def normalise_mac(mac: str) -> str:
    """`52:54:00:12:34:56`, `52-54-00-12-34-56`, `525400123456` or `5254.0012.3456`, either case, to the one
    spelling lablease keeps (lower-case colon form): two spellings of one MAC are one machine's boot file."""
    text = mac.strip().lower() if isinstance(mac, str) else ""
    if not _MAC.fullmatch(text):
        raise ValueError(f"{mac!r} is not a MAC address")
    digits = re.sub(r"[:.-]", "", text)
    # A group address (broadcast ff:ff:..., multicast 01:00:5e:...) or all zeros is no network card's own:
    # kept, it would name a boot file every machine or none asks for.
    if int(digits[:2], 16) & 1:
        raise ValueError(f"{mac!r} is a broadcast or multicast address, not a machine's own MAC (the first byte "
                         "of a machine's MAC is even)")
    if not digits.strip("0"):
        raise ValueError(f"{mac!r} is all zeros, not a machine's MAC")
    return ":".join(digits[i:i + 2] for i in range(0, 12, 2))


def ipxe(image: BootImage | None) -> str:
    if image is None:
        # BIOS: boot the first disk. UEFI has no drive 0x80, so exit to the next boot device.
        return "#!ipxe\n# lablease: boot from the local disk\nsanboot --no-describe --drive 0x80 || exit\n"
    # The named initrd and initrd=initrd let the same script boot BIOS and UEFI (EFI stub) kernels.
    return (f"#!ipxe\n# lablease: install\n"
            f"kernel {image.kernel_url} initrd=initrd {image.kernel_options}\n"
            f"initrd --name initrd {image.initrd_url}\n"
            f"boot\n")


def pxelinux(image: BootImage | None) -> str:
    header = "# lablease: {}\nDEFAULT {}\nPROMPT 0\nTIMEOUT 0\n\n"
    if image is None:
        return header.format("boot from the local disk", "local") + "LABEL local\n  COM32 chain.c32\n  APPEND hd0\n"
    # IPAPPEND 2 adds BOOTIF=<mac>, so the installer configures the interface it booted from.
    return (header.format("install", "install") + "LABEL install\n"
            f"  KERNEL {image.kernel_url}\n"
            f"  APPEND initrd={image.initrd_url} {image.kernel_options}\n"
            "  IPAPPEND 2\n")


def grub2(image: BootImage | None) -> str:
    header = "# lablease: {}\nset default=0\nset timeout=0\n\nmenuentry '{}' {{\n"
    if image is None:
        return (header.format("boot from the local disk", "local disk")
                + "  insmod part_msdos\n  insmod part_gpt\n  insmod biosdisk\n  insmod chain\n"
                + "  set root=(hd0)\n  chainloader +1\n  boot\n}\n")
    return (header.format("install", "install")
            + f"  linux {_grub_path(image.kernel_url)} {image.kernel_options}\n"
            + f"  initrd {_grub_path(image.initrd_url)}\n  boot\n}}\n")


def _grub_path(url: str) -> str:
    """`http://host:8080/a/b` as GRUB names it: `(http,host:8080)/a/b` (GRUB 2.06 reads a comma as part of
    the host name)."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "tftp") or not parts.hostname:
        raise ValueError(f"GRUB fetches only http:// and tftp:// URLs, not {url!r}")
    device = parts.scheme + "," + parts.hostname + (f":{parts.port}" if parts.port else "")
    path = parts.path + (f"?{parts.query}" if parts.query else "")
    return f"({device}){path or '/'}"


_RENDERERS = {"ipxe": ipxe, "pxelinux": pxelinux, "grub2": grub2}


def loaders_for(image: BootImage | None) -> tuple[str, ...]:
    """The loaders that can boot this image: GRUB2 only fetches over http:// and tftp://."""
    if image is None:
        return LOADERS
    try:
        grub2(image)
    except ValueError:
        return tuple(loader for loader in LOADERS if loader != "grub2")
    return LOADERS


def loader_path(tftp_root: Path, mac: str, loader: str) -> Path:
    hyphens = normalise_mac(mac).replace(":", "-")
    relative = {"ipxe": f"ipxe/{hyphens}", "pxelinux": f"pxelinux.cfg/01-{hyphens}",
                "grub2": f"boot/grub/grub.cfg-01-{hyphens}"}
    if loader not in relative:
        raise ValueError(f"unknown boot loader {loader!r}: expected one of {', '.join(LOADERS)}")
    return Path(tftp_root) / relative[loader]


def write(tftp_root: Path, mac: str, image: BootImage | None, loaders=LOADERS) -> list[Path]:
    """Write this MAC's file for each loader (and the iPXE dispatcher when missing or stale)."""
    paths = [loader_path(tftp_root, mac, loader) for loader in loaders]
    texts = [_RENDERERS[loader](image) for loader in loaders]  # all rendered before anything is written
    written = []
    if "ipxe" in loaders and _read(Path(tftp_root) / DISPATCHER) != DISPATCHER_SCRIPT:
        written.append(_replace(Path(tftp_root) / DISPATCHER, DISPATCHER_SCRIPT))
    for path, text in zip(paths, texts):
        written.append(_replace(path, text))
    return written


def clear(tftp_root: Path, mac: str, loaders=LOADERS) -> list[Path]:
    """Remove this MAC's files; a file already gone is fine. The dispatcher stays: it serves every MAC."""
    removed = []
    for path in [loader_path(tftp_root, mac, loader) for loader in loaders]:
        try:
            path.unlink()
        except FileNotFoundError:
            continue
        removed.append(path)
    return removed


def read_ipxe(tftp_root: Path, mac: str) -> str | None:
    """The iPXE script this MAC would boot, or None when it has none."""
    return _read(loader_path(tftp_root, mac, "ipxe"))


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except FileNotFoundError:
        return None


def _replace(path: Path, text: str) -> Path:
    """Write text to path atomically, mode 0644 (the TFTP server runs as another user)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, 0o644)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return path
