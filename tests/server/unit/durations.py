"""The texts DURATION_PATTERN describes, as a Hypothesis strategy (test_timeparse.py, test_time_cases.py)."""
import re

from hypothesis import strategies as st

from lablease.timeparse import DURATION_PATTERN

# Hypothesis writes a lookahead's text out as if it were matched, so the pattern's own (a non-zero digit
# somewhere) put a stray digit before most texts, which the pattern then refused and Hypothesis drew again: 300
# texts took 8 s, skewed to those that begin with a digit. Drawn without it and kept when the whole pattern matches,
# they are the same language, spread over all of its forms, in a sixth of the time.
LOOKAHEAD = "(?=[^1-9]*[1-9])"


def described_durations(fullmatch: bool = False):
    """Texts DURATION_PATTERN matches: whole (fullmatch), or as jsonschema reads a pattern (re.search)."""
    lookarounds = re.findall(r"\(\?<?[=!][^)]*\)", DURATION_PATTERN)
    assert lookarounds == [LOOKAHEAD], f"{lookarounds}: only {LOOKAHEAD} is drawn without and filtered on"
    pattern = re.compile(DURATION_PATTERN)
    return st.from_regex(DURATION_PATTERN.replace(LOOKAHEAD, ""), fullmatch=fullmatch).filter(
        pattern.fullmatch if fullmatch else pattern.search)
