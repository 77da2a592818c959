# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's copy of the server's times and durations against the one table of cases
(tests/time_cases.yml), which tests/server/unit/test_time_cases.py runs against the server."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml
from ansible_collections.lablease.lab.plugins.module_utils.times import format_time, parse_duration, parse_time

TABLE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "time_cases.yml")
with open(TABLE) as cases_file:
    CASES = yaml.safe_load(cases_file)


def case_id(case):
    return repr(case["text"])


@pytest.mark.parametrize("case", CASES["durations"], ids=case_id)
def test_durations(case):
    if "seconds" in case:
        assert parse_duration(case["text"], "duration") == case["seconds"]
    else:
        with pytest.raises(ValueError) as error:
            parse_duration(case["text"], "duration")
        assert str(error.value) == "duration: %s" % case["refused"]


@pytest.mark.parametrize("case", CASES["times"], ids=case_id)
def test_times(case):
    if "normalised" in case:
        assert format_time(parse_time(case["text"], "start")) == case["normalised"]
    else:
        with pytest.raises(ValueError) as error:
            parse_time(case["text"], "start")
        assert str(error.value) == "start: %s" % case["refused"]


def test_unlimited_only_when_allowed():
    assert parse_duration("Unlimited", allow_unlimited=True) == "unlimited"
    with pytest.raises(ValueError, match="^duration: 'unlimited' is not a duration"):
        parse_duration("unlimited")
