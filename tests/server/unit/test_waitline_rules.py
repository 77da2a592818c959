"""The waiting line's pure rules (domain/waitline.py)."""
from datetime import datetime, timedelta, timezone

import pytest

from lablease.domain import waitline
from lablease.domain.errors import Invalid

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=timezone.utc)
H = timedelta(hours=1)


def test_the_estimate_is_the_position_th_end_of_the_holders_bookings():
    ends = [NOW + 3 * H, None, NOW + H, NOW + 2 * H]  # None: an open-ended holder, whose end is unknown
    assert [waitline.estimated_start(p, ends, NOW) for p in (1, 2, 3, 4)] == [NOW + H, NOW + 2 * H, NOW + 3 * H, None]
    assert waitline.estimated_start(1, [], NOW) is None
    assert waitline.estimated_start(1, [NOW - H], NOW) == NOW  # a booking ending in the past means now


def test_what_it_waits_for():
    assert waitline.wanted("s1.lab.test", None, []) == waitline.Wanted("s1.lab.test", None)
    pools = waitline.wanted(None, None, ["a", "b"])
    assert pools.tree == {"or": [{"field": "pool", "op": "=", "value": "a"}, {"field": "pool", "op": "=", "value": "b"}]}
    arch = {"field": "arch", "op": "=", "value": "x86_64"}
    assert waitline.wanted(None, arch, ["a"]).tree == {"and": [arch, {"or": [{"field": "pool", "op": "=", "value": "a"}]}]}
    with pytest.raises(Invalid, match="not both"):
        waitline.wanted("s1.lab.test", arch, [])
    with pytest.raises(Invalid) as nothing:
        waitline.wanted(None, None, [])
    assert nothing.value.field == "system"


def test_take_by_and_its_deadline():
    assert waitline.check_take_by(None, H) is None
    assert waitline.check_take_by(timedelta(minutes=5), None) == timedelta(minutes=5)  # unlimited reservation
    for bad, length in ((timedelta(seconds=5), H), (H, H)):
        with pytest.raises(Invalid):
            waitline.check_take_by(bad, length)
    assert waitline.take_by_deadline(NOW, timedelta(minutes=5), confirmed=False) == NOW + timedelta(minutes=5)
    assert waitline.take_by_deadline(NOW, timedelta(minutes=5), confirmed=True) is None
    assert waitline.due([None, NOW + H, NOW]) == NOW and waitline.due([None]) is None


def test_the_duration_counts_from_the_grant():
    window = waitline.grant_window(NOW, 4 * H)
    assert (window.start, window.end) == (NOW, NOW + 4 * H)
    assert waitline.grant_window(NOW, None).end is None
