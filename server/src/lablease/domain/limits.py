"""What the database holds, as numbers the rules and the API check against.

Ids, counts and durations (as seconds) are stored in integer columns, which on
PostgreSQL are 32 bits: nothing larger can be stored or even looked up.
"""
from __future__ import annotations

MAX_INT = 2**31 - 1

# White space in a JSON Schema pattern, spelt out as a character class's contents: `\s` means Python's
# isspace() to jsonschema (U+001C-U+001F and U+0085 in, U+FEFF out) but ECMAScript's to the compiled validator
# (U+FEFF in, those out), so a pattern with `\s` lets the two disagree. These are both sets together.
SPACE = r"\t\n\x0b\x0c\r\x1c-\x20\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
