"""What the database holds, as numbers the rules and the API check against.

Ids, counts and durations (as seconds) are stored in integer columns, which on
PostgreSQL are 32 bits: nothing larger can be stored or even looked up.
"""
from __future__ import annotations

MAX_INT = 2**31 - 1
