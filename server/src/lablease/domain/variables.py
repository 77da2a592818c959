"""Kickstart variables (ks_meta) that carry secrets: which they are, and how they are shown.

A variable is secret when a part of its name (split at `_ - .`) is a word
for a password, key or token (`root_password`, `rootpw`, `ssh_key`,
`api_token`), or its name matches one of the site's `secret_variables`
(shell-style patterns such as `*_pin`). Their values are used in the
kickstart but never answered by the API nor written to a log: they are
shown as MASK.
"""
from __future__ import annotations

import re
import shlex
from fnmatch import fnmatchcase

MASK = "********"
SECRET_WORDS = frozenset({"password", "passwd", "pass", "pw", "rootpw", "secret", "token", "key", "keys",
                          "credentials", "credential", "passphrase", "apikey", "privkey"})
_PARTS = re.compile(r"[_.\-]+")


def is_secret(name: str, site_patterns: tuple[str, ...] = ()) -> bool:
    lowered = name.lower()
    if any(part in SECRET_WORDS for part in _PARTS.split(lowered)) or lowered.endswith("password"):
        return True
    return any(fnmatchcase(lowered, pattern.lower()) for pattern in site_patterns)


def masked_ks_meta(text: str | None, site_patterns: tuple[str, ...] = ()) -> str | None:
    """ks_meta text with every secret variable's value replaced by MASK (the rest as given)."""
    if not text:
        return text
    try:
        words = shlex.split(text)
    except ValueError:
        return MASK  # unreadable, so its secrets cannot be told apart: show none of it
    if not any(_secret_word(word, site_patterns) for word in words):
        return text
    return " ".join(_masked_word(word, site_patterns) for word in words)


def _secret_word(word: str, site_patterns) -> bool:
    name, equals, _ = word.partition("=")
    return bool(equals) and is_secret(name, site_patterns)


def _masked_word(word: str, site_patterns) -> str:
    name, _, value = word.partition("=")
    if _secret_word(word, site_patterns):
        return f"{name}={MASK}"
    return shlex.quote(word) if "=" not in word else f"{name}={shlex.quote(value)}"


def secret_values(meta: dict, site_patterns: tuple[str, ...] = ()) -> list[str]:
    """The values of the secret variables in parsed ks_meta, longest first (to mask them in a text)."""
    found = {str(v) for k, v in meta.items() if is_secret(k, site_patterns) and isinstance(v, str) and v}
    return sorted(found, key=len, reverse=True)


def masked_text(text: str, values: list[str]) -> str:
    """A text (a rendered kickstart) with each of the given secret values replaced by MASK."""
    for value in values:
        text = text.replace(value, MASK)
    return text
