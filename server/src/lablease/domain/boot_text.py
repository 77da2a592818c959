"""Text bound for a netboot file or a kickstart, and Beaker-style option strings (ks_meta, kernel options).

Boot loader scripts (iPXE, PXELINUX, GRUB) and kickstarts are read line by
line: a newline inside a kernel option, a ks_meta value or a distro URL
would start a command of its own there. `unfit_for_a_line` is the one rule.
The API refuses such text naming the field (distro trees, systems' netboot
settings, provisioning, jobs), and the writers refuse it again
(provision/netboot.py BootImage, provision/kickstart.py), so text that
reached the database some other way fails one installation, never the worker.
"""
from __future__ import annotations

import shlex
import unicodedata
from typing import Iterator

# Control characters (newline, carriage return, tab, NUL, C1 controls) and Unicode line and
# paragraph separators: whatever a reader of the file could take for the end of a line.
_LINE_BREAKING = ("Cc", "Zl", "Zp")


def unfit_for_a_line(text: str) -> str | None:
    """Why text cannot go into one line of a boot script or kickstart, or None when it can."""
    for position, char in enumerate(text):
        if unicodedata.category(char) in _LINE_BREAKING:
            return (f"holds a control character (U+{ord(char):04X}) at character {position + 1}; "
                    "it goes into a netboot file or kickstart and must fit on one line")
    return None


def first_unfit(value, where: str) -> tuple[str, str] | None:
    """The first text in value (nested objects and lists, keys too) unfit for a line: (field, why)."""
    pending = [(where, value)]
    while pending:
        path, item = pending.pop(0)
        if isinstance(item, str):
            if (why := unfit_for_a_line(item)) is not None:
                return path, why
        elif isinstance(item, dict):
            for key, inner in item.items():
                if isinstance(key, str) and (why := unfit_for_a_line(key)) is not None:
                    return path, f"a key {why}"
                pending.append((f"{path}.{key}" if path else str(key), inner))
        elif isinstance(item, (list, tuple)):
            pending.extend((f"{path}[{i}]", inner) for i, inner in enumerate(item))
    return None


# --- ks_meta and kernel options ----------------------------------------------------------------

def options(text: str | None, what: str) -> Iterator[tuple[str, str | None | bool]]:
    """(key, value) from `key=value key !key`: value None for a bare key, False for !key.

    Raises ValueError when the text cannot be parsed or a key or value is unfit for a line
    (shell quoting could otherwise carry a newline into one value).
    """
    try:
        words = shlex.split(text or "")
    except ValueError as error:
        raise ValueError(f"cannot parse {what}: {error}") from None
    for word in words:
        if word.startswith("!"):
            key, value = word[1:], False
        else:
            key, _, value = word.partition("=")
            value = value if "=" in word else None
        if not key:
            raise ValueError(f"cannot parse {what}: {word!r} has no key")
        if (why := unfit_for_a_line(word)) is not None:
            raise ValueError(f"{what} {key!r} {why}")
        yield key, value


def check_options(text: str | None, what: str) -> None:
    """ValueError unless text is a usable ks_meta or kernel command line."""
    for _ in options(text, what):
        pass


def merge_ks_meta(*texts: str | None) -> dict:
    """ks_meta from several sources, later ones winning; `!key` drops a key set earlier."""
    merged: dict = {}
    for text in texts:
        for key, value in options(text, "ks_meta"):
            if value is False:
                merged.pop(key, None)
            else:
                merged[key] = True if value is None else value
    return merged


def merge_kernel_options(*texts: str | None) -> str:
    """Kernel command lines merged like ks_meta, as one string in first-seen key order.

    A key repeated in one text (`console=tty0 console=ttyS0`) keeps all its
    values; a later text that sets the key replaces them all.
    """
    merged: dict[str, list] = {}
    for text in texts:
        set_here: set[str] = set()
        for key, value in options(text, "kernel options"):
            if value is False:
                merged.pop(key, None)
                set_here.discard(key)
            elif key in set_here:
                merged[key].append(value)
            else:
                merged[key] = [value]
                set_here.add(key)
    return " ".join(_kernel_word(key, value) for key, values in merged.items() for value in values)


def _kernel_word(key: str, value: str | None) -> str:
    if value is None:
        return key
    if any(char.isspace() for char in value):
        return f'{key}="{value}"'  # the kernel's own quoting: double quotes around the value
    return f"{key}={value}"
