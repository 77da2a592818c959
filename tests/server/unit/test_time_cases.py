"""The server's reader and writer of times and durations against the one table of cases (tests/time_cases.yml),
which the collection's copy (plugins/module_utils/times.py) is run against as well."""
import importlib.util
from datetime import timedelta
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from lablease.domain.errors import Invalid
from lablease.domain.times import format_human, format_time
from lablease import timeparse
from lablease.timeparse import parse_duration, parse_time

from .durations import described_durations

ROOT = Path(__file__).resolve().parents[3]
CASES = yaml.safe_load((ROOT / "tests" / "time_cases.yml").read_text())


def _id(case):
    return repr(case["text"])


@pytest.mark.parametrize("case", CASES["durations"], ids=_id)
def test_durations(case):
    if "seconds" in case:
        assert parse_duration(case["text"], "duration") == timedelta(seconds=case["seconds"])
    else:
        with pytest.raises(Invalid) as error:
            parse_duration(case["text"], "duration")
        assert error.value.detail == f"duration: {case['refused']}"


@pytest.mark.parametrize("case", CASES["times"], ids=_id)
def test_times(case):
    if "normalised" in case:
        assert format_time(parse_time(case["text"], "start")) == case["normalised"]
    else:
        with pytest.raises(Invalid) as error:
            parse_time(case["text"], "start")
        assert error.value.detail == f"start: {case['refused']}"


def _collection_copy():
    """plugins/module_utils/times.py, loaded by path: it imports only the standard library."""
    spec = importlib.util.spec_from_file_location("collection_times", ROOT / "plugins" / "module_utils" / "times.py")
    copy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(copy)
    return copy


COPY = _collection_copy()


def test_the_collection_copies_the_grammar_as_text():
    """The collection cannot import the server: its copy of the patterns is the same text."""
    names = ("DURATION_PATTERN", "TIME_PATTERN", "KNOWN_FORM_PATTERN", "CALENDAR_PATTERN")
    assert [getattr(COPY, name) for name in names] == [getattr(timeparse, name) for name in names]


def _server_says(text):
    try:
        return parse_duration(text, "duration").total_seconds()
    except Invalid as error:
        return error.detail


def _collection_says(text):
    try:
        return COPY.parse_duration(text, "duration")
    except ValueError as error:
        return str(error)


# Beyond the table: texts the grammar describes, and near misses typed from the same characters.
@given(described_durations(fullmatch=True) | st.text(alphabet="0123456789 .:,PTWDHMSYpthmsdwyo", max_size=12))
# Generation's speed health check is timed: on two busy cores it failed a run that generated the same examples.
@settings(max_examples=500, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_collection_and_the_server_agree_on_any_text(text):
    assert _collection_says(text) == _server_says(text), repr(text)


@pytest.mark.parametrize("seconds, text", [
    (5400, "1h30m"), (2700, "45m"), (183600, "2d3h"), (604800, "1w"), (788645, "1w2d3h4m5s"), (10, "10s"),
    (86400, "1d"), (0.5, "0.5s"), (90.25, "1m30.25s"), (0, "0s"), (-3, "0s"),
])
def test_the_human_form(seconds, text):
    assert format_human(timedelta(seconds=seconds)) == text
    assert format_human(seconds) == text


@pytest.mark.parametrize("seconds", [1, 59, 60, 3599, 5400, 86399, 90061, 604800, 788645, 999 * 604800])
def test_the_human_form_reads_back(seconds):
    """Messages write durations in a form users may type back."""
    assert parse_duration(format_human(seconds)) == timedelta(seconds=seconds)
