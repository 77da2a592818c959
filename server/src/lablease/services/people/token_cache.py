"""Verified API tokens → their Actor, kept by each process for a few seconds.

Every API request authenticates; a cached token costs a dictionary lookup and
one `stat` instead of a database statement. What bounds a stale entry:

- `token_cache_seconds` (the app's clock): past it, the token is verified again;
- the token's own expiry, checked on every use;
- the stamp of store/auth_stamp.py: any commit on this host that changes a
  token, user, group or membership empties every process's cache before its
  next request.

So a revoked token, a disabled user or a changed group membership takes
effect at once for the processes of this host, and within
`token_cache_seconds` for a server on another host (docs/access.md).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

from ...domain.permissions import Actor
from ...store.auth_stamp import stamp_of

MAX_ENTRIES = 10_000  # verified tokens only, so never attacker-sized; past it the oldest are dropped


@dataclass(frozen=True)
class Entry:
    actor: Actor
    verified_at: datetime
    expires_at: datetime | None  # the token's own expiry


class TokenCache:
    def __init__(self, lifetime: timedelta, stamp: Path):
        self.lifetime = lifetime
        self.stamp = stamp
        self._seen = stamp_of(stamp)
        self._entries: dict[str, Entry] = {}
        self._lock = threading.Lock()

    def get(self, token_hash: str, now: datetime) -> Actor | None:
        """The cached Actor of a token verified less than `lifetime` ago (by `now`), else None."""
        if not self.lifetime:
            return None
        self._drop_all_if_changed()
        entry = self._entries.get(token_hash)
        if entry is None:
            return None
        if not (entry.verified_at <= now < entry.verified_at + self.lifetime) or \
                (entry.expires_at is not None and entry.expires_at <= now):
            self._entries.pop(token_hash, None)
            return None
        return entry.actor

    def put(self, token_hash: str, actor: Actor, expires_at: datetime | None, now: datetime) -> None:
        if not self.lifetime:
            return
        with self._lock:
            if len(self._entries) >= MAX_ENTRIES:
                for old in list(self._entries)[:MAX_ENTRIES // 10]:  # insertion order: the oldest
                    self._entries.pop(old, None)
            self._entries[token_hash] = Entry(actor, now, expires_at)

    def _drop_all_if_changed(self) -> None:
        stamp = stamp_of(self.stamp)
        if stamp != self._seen:
            with self._lock:
                self._entries.clear()
                self._seen = stamp
