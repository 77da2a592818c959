"""Why a recipe waits, in words: the order of the obstacles, and what each sentence says."""
from datetime import datetime, timezone

from lablease.domain import waiting as w
from lablease.domain.permissions import LENT_TO_ANOTHER

T = datetime(2026, 3, 4, 12, 0, tzinfo=timezone.utc)


def test_an_advance_reservation_comes_before_anything_else():
    said = w.reason(w.Facts(0, {"arch = s390x": 3}, [], ar_wait="waits for advance reservation 4, which starts at X"))
    assert (said.category, said.sentence) == ("advance-reservation",
                                              "Waits for advance reservation 4, which starts at X.")


def test_without_candidates_broken_then_lent_then_the_top_reasons():
    assert w.reason(w.Facts(0, {w.BROKEN: 1, LENT_TO_ANOTHER: 2}, [])).category == "broken"
    assert w.reason(w.Facts(0, {LENT_TO_ANOTHER: 2, "arch = s390x": 5}, [])).category == "lent"
    said = w.reason(w.Facts(0, {"a": 1, "b": 4, "c": 2, "d": 3}, []))
    assert said.sentence == "No system can ever run it (4 system(s): b; 3 system(s): d; 2 system(s): c)."


def test_busy_names_the_earliest_end_and_free_candidates_mean_others_come_first():
    said = w.reason(w.Facts(2, {}, [("a", T.replace(hour=15)), ("b", T.replace(hour=14))]))
    assert said.sentence == "All 2 candidate system(s) are busy; the first frees up at 2026-03-04T14:00:00Z."
    assert w.reason(w.Facts(1, {}, [("a", None)])).sentence.endswith("none has an end set.")
    assert w.reason(w.Facts(3, {}, [("a", None)], ahead=2)).category == "behind"
    assert w.reason(w.Facts(3, {}, [])).category == "peers"
    assert w.reason(w.Facts(3, {}, [], holding="h.lab")).category == "holding"
