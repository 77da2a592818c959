"""Rules of signing in to the web pages: what a password must be, where a sign-in may lead back to."""
from __future__ import annotations

from urllib.parse import urlsplit

from .errors import Invalid

MIN_PASSWORD = 8  # NIST SP 800-63B's floor for a chosen secret
MAX_PASSWORD = 1024  # hashing cost must not be the sender's to choose


def check_new_password(password: str) -> str:
    if not isinstance(password, str) or len(password) < MIN_PASSWORD:
        raise Invalid("password", f"must be at least {MIN_PASSWORD} characters")
    if len(password) > MAX_PASSWORD:
        raise Invalid("password", f"must be at most {MAX_PASSWORD} characters")
    if password != password.strip("\r\n"):
        raise Invalid("password", "must not begin or end with a line break")
    return password


def safe_next(target: str | None, default: str = "/systems") -> str:
    """Where to go after signing in: a path on this site only (never another host: no open redirect)."""
    if not target:
        return default
    parts = urlsplit(target)
    if parts.scheme or parts.netloc or not target.startswith("/") or target.startswith("//") or "\\" in target:
        return default
    return target
