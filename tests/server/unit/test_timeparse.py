from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings, strategies as st

from lablease.api.schemas import MAX_SECONDS
from lablease.domain.errors import Invalid
from lablease.timeparse import DURATION_PATTERN, format_duration, format_time, parse_duration, parse_time


@pytest.mark.parametrize("text, seconds", [
    ("PT4H", 14400), ("P1DT2H", 93600), ("P1W", 604800), ("30m", 1800), ("4h", 14400), ("2d", 172800),
    ("1w", 604800), ("1:30:00", 5400), ("1h30m", 5400), (90, 90), ("pt15m", 900),
])
def test_durations(text, seconds):
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["", "soon", "4x", "P1M", "P1Y", "-4h", 0, -5, True, None, "PT"])
def test_bad_durations_name_the_field(text):
    with pytest.raises(Invalid) as error:
        parse_duration(text, "extend_by")
    assert error.value.field == "extend_by"


def test_unlimited_only_when_allowed():
    assert parse_duration("unlimited", allow_unlimited=True) == "unlimited"
    with pytest.raises(Invalid):
        parse_duration("unlimited")


def test_times():
    assert parse_time("2026-11-22T14:00:00Z", "start") == datetime(2026, 11, 22, 14, tzinfo=timezone.utc)
    assert parse_time("2026-11-22T15:00:00+01:00", "start") == datetime(2026, 11, 22, 14, tzinfo=timezone.utc)
    for bad in ("2026-11-22T14:00:00", "tomorrow", 5):
        with pytest.raises(Invalid) as error:
            parse_time(bad, "start")
        assert error.value.field == "start"


def test_formats():
    assert format_time(datetime(2026, 11, 22, 14, 0, 0, 123, tzinfo=timezone.utc)) == "2026-11-22T14:00:00Z"
    assert format_duration(timedelta(hours=4)) == "PT4H"


# The API description's pattern for durations is the server's rule: every string it allows is read as
# one second to MAX_SECONDS, and forms outside it are refused even where pytimeparse2 would read them.
@given(st.from_regex(DURATION_PATTERN))
@settings(max_examples=300, derandomize=True, database=None)
def test_every_described_duration_is_read(text):
    assert timedelta(seconds=1) <= parse_duration(text) <= timedelta(seconds=MAX_SECONDS)


@pytest.mark.parametrize("text", ["1y", "3mo", "1d, 4:00:00", "0h 0m", "0.5s", "1h\n30m"])
def test_durations_outside_the_described_forms_are_refused(text):
    with pytest.raises(Invalid, match="duration: .*(is not a duration|must be positive)"):
        parse_duration(text)
