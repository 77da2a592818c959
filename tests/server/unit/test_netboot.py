"""Netboot files: byte-exact loader scripts, where they go, and how they are replaced."""
import os
import stat
from pathlib import Path

import pytest

from lablease.domain.boot_text import unfit_for_a_line
from lablease.provision import netboot
from lablease.provision.netboot import BootImage

GOLDEN = Path(__file__).parent / "golden" / "netboot"
MAC = "52:54:00:12:34:56"
OTHER_MAC = "52:54:00:ab:cd:ef"
IMAGE = BootImage(
    kernel_url="http://mirror.lab.example:8000/fedora/40/x86_64/os/images/pxeboot/vmlinuz",
    initrd_url="http://mirror.lab.example:8000/fedora/40/x86_64/os/images/pxeboot/initrd.img",
    kernel_options="inst.ks=http://lablease.example:8080/installations/9/kickstart console=ttyS0,115200n8",
)
RENDERERS = {"ipxe": netboot.ipxe, "pxelinux": netboot.pxelinux, "grub2": netboot.grub2}


@pytest.mark.parametrize("loader", netboot.LOADERS)
@pytest.mark.parametrize("kind, image", [("install", IMAGE), ("local", None)])
def test_each_loader_matches_its_golden_file(loader, kind, image):
    expected = (GOLDEN / f"{loader}-{kind}").read_bytes()
    assert RENDERERS[loader](image).encode() == expected


def test_files_go_where_each_loader_looks(tmp_path):
    written = netboot.write(tmp_path, "52-54-00-12-34-56".upper(), IMAGE)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in written) == [
        "boot.ipxe", "boot/grub/grub.cfg-01-52-54-00-12-34-56",
        "ipxe/52-54-00-12-34-56", "pxelinux.cfg/01-52-54-00-12-34-56"]
    assert (tmp_path / "boot.ipxe").read_bytes() == (GOLDEN / "boot.ipxe").read_bytes()
    assert netboot.read_ipxe(tmp_path, MAC) == netboot.ipxe(IMAGE)
    assert (tmp_path / "pxelinux.cfg/01-52-54-00-12-34-56").read_text() == netboot.pxelinux(IMAGE)
    assert (tmp_path / "boot/grub/grub.cfg-01-52-54-00-12-34-56").read_text() == netboot.grub2(IMAGE)


def test_the_dispatcher_is_written_only_when_missing_or_different(tmp_path):
    netboot.write(tmp_path, MAC, IMAGE)
    assert tmp_path / "boot.ipxe" not in netboot.write(tmp_path, OTHER_MAC, IMAGE)
    (tmp_path / "boot.ipxe").write_text("#!ipxe\nexit\n")
    assert tmp_path / "boot.ipxe" in netboot.write(tmp_path, OTHER_MAC, None)
    assert (tmp_path / "boot.ipxe").read_text() == netboot.DISPATCHER_SCRIPT


def test_only_the_loaders_asked_for_are_written(tmp_path):
    written = netboot.write(tmp_path, MAC, None, loaders=("grub2",))
    assert [p.relative_to(tmp_path).as_posix() for p in written] == ["boot/grub/grub.cfg-01-52-54-00-12-34-56"]
    assert netboot.read_ipxe(tmp_path, MAC) is None


def test_write_replaces_the_file_atomically_leaving_no_temporary_files(tmp_path, monkeypatch):
    netboot.write(tmp_path, MAC, IMAGE)
    target = tmp_path / "ipxe" / "52-54-00-12-34-56"
    target.chmod(0o600)
    replaced = []
    real_replace = os.replace

    def watching_replace(source, destination):
        # At the moment of the swap the old file is still whole and the new one is complete beside it.
        assert target.read_text() == netboot.ipxe(IMAGE)
        assert Path(source).parent == Path(destination).parent
        replaced.append((Path(source).read_text(), Path(destination)))
        real_replace(source, destination)

    monkeypatch.setattr(netboot.os, "replace", watching_replace)
    netboot.write(tmp_path, MAC, None, loaders=("ipxe",))
    assert replaced == [(netboot.ipxe(None), target)]
    assert target.read_text() == netboot.ipxe(None)
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert sorted(p.name for p in target.parent.iterdir()) == ["52-54-00-12-34-56"]


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path, monkeypatch):
    netboot.write(tmp_path, MAC, IMAGE, loaders=("pxelinux",))

    def failing_fsync(fd):
        raise OSError("disk full")

    monkeypatch.setattr(netboot.os, "fsync", failing_fsync)
    with pytest.raises(OSError):
        netboot.write(tmp_path, MAC, None, loaders=("pxelinux",))
    directory = tmp_path / "pxelinux.cfg"
    assert [p.name for p in directory.iterdir()] == ["01-52-54-00-12-34-56"]
    assert (directory / "01-52-54-00-12-34-56").read_text() == netboot.pxelinux(IMAGE)


def test_every_written_file_is_world_readable(tmp_path):
    old_umask = os.umask(0o077)
    try:
        written = netboot.write(tmp_path, MAC, IMAGE)
    finally:
        os.umask(old_umask)
    assert {stat.S_IMODE(p.stat().st_mode) for p in written} == {0o644}


def test_clear_removes_exactly_that_macs_files(tmp_path):
    netboot.write(tmp_path, MAC, IMAGE)
    others = netboot.write(tmp_path, OTHER_MAC, None)
    removed = netboot.clear(tmp_path, MAC.upper())
    assert len(removed) == 3 and not any(p.exists() for p in removed)
    assert all(p.exists() for p in others)  # the other MAC's files, and the shared dispatcher
    assert netboot.read_ipxe(tmp_path, OTHER_MAC) == netboot.ipxe(None)
    assert netboot.clear(tmp_path, MAC) == []  # already gone is fine


@pytest.mark.parametrize("mac, expected", [
    ("52:54:00:12:34:56", "52:54:00:12:34:56"),
    ("52-54-00-12-34-56", "52:54:00:12:34:56"),
    ("52:54:00:AB:cd:EF", "52:54:00:ab:cd:ef"),
    (" 52-54-00-AB-CD-EF\n", "52:54:00:ab:cd:ef"),
    ("525400BB0001", "52:54:00:bb:00:01"),
    ("5254.00bb.0001", "52:54:00:bb:00:01"),
])
def test_normalise_mac(mac, expected):
    assert netboot.normalise_mac(mac) == expected


@pytest.mark.parametrize("mac", [
    "", "52:54:00:12:34", "52:54:00:12:34:56:78", "52:54-00:12:34:56", "5254.0012-3456",
    "52540012345", "5254001234567", "52:54:00:12:34:5g", "5254:0012:3456", "../../etc/passwd", None,
])
def test_bad_macs_are_refused(tmp_path, mac):
    with pytest.raises(ValueError, match="is not a MAC address"):
        netboot.normalise_mac(mac)
    with pytest.raises(ValueError):
        netboot.write(tmp_path, mac, IMAGE)
    assert list(tmp_path.iterdir()) == []


def test_a_newline_cannot_smuggle_a_boot_loader_command():
    with pytest.raises(ValueError, match="kernel_options"):
        BootImage(IMAGE.kernel_url, IMAGE.initrd_url, "quiet\nshell")


@pytest.mark.parametrize("text", ["quiet\rshell", "a\u2028b", "a\x85b", "a\tb", "a\x00"])
def test_the_writer_and_the_api_share_one_rule(text):
    """BootImage refuses exactly what domain/boot_text.py (the API's check) calls unfit for a line."""
    assert unfit_for_a_line(text) is not None
    with pytest.raises(ValueError, match="control character"):
        BootImage(IMAGE.kernel_url, IMAGE.initrd_url, text)
    assert unfit_for_a_line("quiet console=ttyS0,115200 é") is None


def test_grub_names_http_urls_its_own_way_and_refuses_https():
    image = BootImage("http://mirror/vmlinuz", "tftp://10.0.0.1/initrd.img", "quiet")
    assert "linux (http,mirror)/vmlinuz quiet\n" in netboot.grub2(image)
    assert "initrd (tftp,10.0.0.1)/initrd.img\n" in netboot.grub2(image)
    # a port goes with the host (GRUB 2.06 reads all after the device's first comma as the host name)
    ported = netboot.grub2(BootImage("http://10.0.2.2:8042/vmlinuz", "http://10.0.2.2:8042/initrd.img", ""))
    assert "linux (http,10.0.2.2:8042)/vmlinuz" in ported and "(http,10.0.2.2,8042)" not in ported
    with pytest.raises(ValueError, match="GRUB fetches only"):
        netboot.grub2(BootImage("https://mirror/vmlinuz", "https://mirror/initrd.img", ""))


def test_unknown_loader_is_refused(tmp_path):
    with pytest.raises(ValueError, match="unknown boot loader"):
        netboot.write(tmp_path, MAC, IMAGE, loaders=("yaboot",))
