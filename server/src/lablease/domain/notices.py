"""When holders are warned before a reservation or loan ends."""
from __future__ import annotations

from datetime import datetime, timedelta


def warn_at(start: datetime, end: datetime | None, lead: timedelta, short_lead: timedelta) -> datetime | None:
    """The moment to warn: `lead` before the end, or `short_lead` for windows shorter than twice `lead`.

    Windows no longer than `short_lead` get no warning (they are over too soon
    for one to help); open-ended windows never end, so are never warned.
    """
    if end is None:
        return None
    length = end - start
    if length >= 2 * lead:
        return end - lead
    if length > short_lead:
        return end - short_lead
    return None


def retry_at(now: datetime, attempts: int, first_delay: timedelta) -> datetime:
    """Exponential backoff: first_delay after the first failure, doubled after each further one."""
    return now + first_delay * (2 ** max(0, attempts - 1))
