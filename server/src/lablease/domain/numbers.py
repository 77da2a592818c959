"""Whole numbers from requests: bounded by what the database can store."""
from __future__ import annotations

from .errors import Invalid
from .limits import MAX_INT



def check_whole(field: str, value, minimum: int = 1) -> int:
    """A whole number in [minimum, MAX_INT]; 4.0 counts (JSON does not tell 4 from 4.0)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        raise Invalid(field, "must be a whole number")
    if value > MAX_INT:
        raise Invalid(field, f"is too large (at most {MAX_INT})")
    if value < minimum:
        raise Invalid(field, f"must be at least {minimum}")
    return value
