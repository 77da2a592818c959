"""Failed sign-ins are counted per user name and per client address; past a limit, sign-in waits (429).

Guessing passwords through /login then costs an attacker the window per few tries, for one name from many
addresses as for many names from one address. The counts live in the server process (each gunicorn worker
keeps its own: see docs/web.md) and a successful sign-in clears its name's count, not its address's.
"""
from __future__ import annotations

import math
import threading
from collections import deque
from datetime import datetime, timedelta

WINDOW = timedelta(minutes=15)
PER_NAME = 5  # failed sign-ins for one user name within WINDOW, from anywhere
PER_ADDRESS = 20  # failed sign-ins from one client address within WINDOW, whatever the names
KEYS_KEPT = 10_000  # names and addresses remembered at most (the oldest are forgotten first)


class FailedSignIns:
    def __init__(self, window: timedelta = WINDOW, per_name: int = PER_NAME, per_address: int = PER_ADDRESS):
        self.window, self.limits = window, {"name": per_name, "address": per_address}
        self._failures: dict[tuple[str, str], deque[datetime]] = {}
        self._lock = threading.Lock()  # gunicorn's threads share one process's counts

    def retry_after(self, name: str, address: str, now: datetime) -> int:
        """Seconds until a sign-in may be tried again for this name from this address (0: now)."""
        with self._lock:
            waits = [self._wait(("name", name.lower()), now), self._wait(("address", address), now)]
        return max(waits)

    def failed(self, name: str, address: str, now: datetime) -> None:
        with self._lock:
            for key in (("name", name.lower()), ("address", address)):
                self._failures.setdefault(key, deque(maxlen=self.limits[key[0]])).append(now)
                if len(self._failures) > KEYS_KEPT:
                    del self._failures[next(iter(self._failures))]

    def succeeded(self, name: str) -> None:
        with self._lock:
            self._failures.pop(("name", name.lower()), None)

    def _wait(self, key: tuple[str, str], now: datetime) -> int:
        """The deque keeps the last `limit` failures: when it is full, the oldest one's age decides."""
        failures = self._failures.get(key)
        if not failures or len(failures) < self.limits[key[0]]:
            return 0
        free_at = failures[0] + self.window
        return max(0, math.ceil((free_at - now).total_seconds()))
