"""Passwords this process verified lately, so that the same person signing in again skips argon2id.

`bkr` with `AUTH_METHOD = "password"` signs in anew for every command: each paid the argon2id check
(0.3-0.45 s of CPU here, by design) before doing anything. A password that passed the check is
remembered for `password_cache_seconds` as an HMAC of it under a key this process drew at random,
with the user and the stored argon2id hash it passed against:

- only a password that passed is kept, so a wrong guess always pays the full check (the cost that
  slows guessing is untouched);
- the stored hash is read on every sign-in and is part of the entry: a changed or removed password
  (on any host) is never matched by an entry made for the old one;
- a disabled user is refused after the check, cached or not (services/auth/signin.py);
- what is in memory is no password and no hash of one anybody else can compute without the key.
"""
from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from datetime import timedelta

MAX_ENTRIES = 10_000  # passwords that passed only, so never attacker-sized; past it the oldest go


class VerifiedPasswords:
    def __init__(self):
        self._key = secrets.token_bytes(32)
        self._entries: dict[tuple[int, str], tuple[bytes, float]] = {}  # (user, stored hash) -> digest, when
        self._lock = threading.Lock()

    def _digest(self, password: str) -> bytes:
        return hmac.new(self._key, password.encode("utf-8", "surrogatepass"), hashlib.sha256).digest()

    def knows(self, user_id: int, stored: str, password: str, lifetime: timedelta | None) -> bool:
        """Whether this password passed against this stored hash within `lifetime`."""
        if not lifetime:
            return False
        with self._lock:
            entry = self._entries.get((user_id, stored))
        if entry is None or time.monotonic() - entry[1] > lifetime.total_seconds():
            return False
        return hmac.compare_digest(entry[0], self._digest(password))

    def remember(self, user_id: int, stored: str, password: str, lifetime: timedelta | None) -> None:
        if not lifetime:
            return
        digest = self._digest(password)
        with self._lock:
            self._entries.pop((user_id, stored), None)  # (re-inserted last: the dict stays oldest first)
            self._entries[(user_id, stored)] = (digest, time.monotonic())
            while len(self._entries) > MAX_ENTRIES:
                del self._entries[next(iter(self._entries))]
