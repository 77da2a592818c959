"""Advance reservations' pure rules: window, states, ACL, mail, error handling, bound work, accounting;
and Grid Engine's time and duration forms."""
from datetime import datetime, timedelta, timezone

import pytest

from lablease.domain.advance import (
    ACTIVE, FINAL, STATES, bound_runtime_problem, check_acl, check_error_handling, check_mail_events,
    check_transition, in_acl, next_transition, overlap_seconds, reserved_seconds, resolve_window, state_by_time,
    wants_mail)
from lablease.domain.errors import Conflict, Invalid
from lablease.timeparse import parse_ge_duration, parse_ge_time

UTC = timezone.utc
NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
H = timedelta(hours=1)
M = timedelta(minutes=1)
S = timedelta(seconds=1)


def reason(error) -> str:
    """The sentence an Invalid gives, without its field name."""
    return error.value.extra["reason"]


# --- window: qrsub -a / -e / -d -------------------------------------------------------------------------

START = NOW + 2 * H
END = NOW + 5 * H
DURATION = 3 * H


@pytest.mark.parametrize("given, expected", [
    ({"end": END}, (NOW, END)),  # start defaults to now
    ({"duration": DURATION}, (NOW, NOW + DURATION)),
    ({"start": START, "end": END}, (START, END)),
    ({"start": START, "duration": DURATION}, (START, START + DURATION)),
    ({"end": END, "duration": DURATION}, (END - DURATION, END)),  # as qrsub: start = end - duration
    ({"start": START, "end": END, "duration": DURATION}, (START, END)),  # three that agree
], ids=["end", "duration", "start+end", "start+duration", "end+duration", "agreeing-triple"])
def test_any_two_of_start_end_duration_or_three_that_agree(given, expected):
    assert resolve_window(NOW, **given) == expected


@pytest.mark.parametrize("given", [{}, {"start": START}], ids=["none", "start"])
def test_an_end_or_a_duration_is_required(given):
    with pytest.raises(Invalid) as error:
        resolve_window(NOW, **given)
    assert error.value.field == "end"
    assert "end" in reason(error) and "duration" in reason(error)
    assert "-e" in reason(error) and "-d" in reason(error)


@pytest.mark.parametrize("duration", [DURATION + S, DURATION - S, DURATION + timedelta(microseconds=1), 2 * H])
def test_a_dissonant_triple_is_refused_saying_why(duration):
    with pytest.raises(Invalid) as error:
        resolve_window(NOW, start=START, end=END, duration=duration)
    assert error.value.field == "duration"
    text = reason(error)
    assert text.startswith("start + duration = ")
    assert ", but end is 2026-11-22T17:00:00Z" in text
    assert "give two of the three, or three that agree" in text


def test_the_dissonant_message_shows_both_times():
    with pytest.raises(Invalid) as error:
        resolve_window(NOW, start=START, end=END, duration=2 * H)
    assert reason(error) == (
        "start + duration = 2026-11-22T16:00:00Z, but end is 2026-11-22T17:00:00Z: "
        "give two of the three, or three that agree")


def test_duration_may_be_a_number_of_seconds():
    assert resolve_window(NOW, duration=3600) == (NOW, NOW + H)
    assert resolve_window(NOW, start=START, duration=90.0) == (START, START + timedelta(seconds=90))


@pytest.mark.parametrize("duration", [timedelta(0), -H, 0, -5, True, "4h", [1]])
def test_a_duration_must_be_positive(duration):
    with pytest.raises(Invalid) as error:
        resolve_window(NOW, duration=duration)
    assert error.value.field == "duration"


@pytest.mark.parametrize("given", [
    {"start": START, "end": START},
    {"start": START, "end": START - M},
    {"start": START, "end": NOW + M},
])
def test_the_end_must_be_after_the_start(given):
    with pytest.raises(Invalid) as error:
        resolve_window(NOW, **given)
    assert error.value.field == "end"
    assert "after the start" in reason(error)


@pytest.mark.parametrize("given", [{"end": NOW}, {"end": NOW - H}, {"start": NOW - 30 * S, "end": NOW - 10 * S}])
def test_an_end_in_the_past_is_refused(given):
    with pytest.raises(Invalid) as error:
        resolve_window(NOW, **given)
    assert error.value.field == "end"
    assert "in the past" in reason(error)


@pytest.mark.parametrize("given", [
    {"start": NOW - M - S, "end": END},
    {"start": NOW - H, "duration": 3 * H},
    {"start": NOW - 2 * H, "end": END, "duration": END - (NOW - 2 * H)},
])
def test_a_start_more_than_a_minute_in_the_past_is_refused(given):
    with pytest.raises(Invalid) as error:
        resolve_window(NOW, **given)
    assert error.value.field == "start"
    assert "in the past" in reason(error)


def test_end_minus_duration_in_the_past_is_refused_naming_both():
    with pytest.raises(Invalid) as error:
        resolve_window(NOW, end=NOW + H, duration=2 * H)
    assert error.value.field == "start"
    assert reason(error).startswith("end - duration = 2026-11-22T11:00:00Z is in the past")


@pytest.mark.parametrize("late", [S, 30 * S, M])
def test_a_start_up_to_a_minute_in_the_past_means_now(late):
    assert resolve_window(NOW, start=NOW - late, end=END) == (NOW, END)
    # the end is what the caller's values make; only the start moves
    assert resolve_window(NOW, start=NOW - late, duration=H) == (NOW, NOW - late + H)
    assert resolve_window(NOW, start=NOW - late, end=NOW - late + H, duration=H) == (NOW, NOW - late + H)
    assert resolve_window(NOW, end=NOW - late + H, duration=H) == (NOW, NOW - late + H)


def test_a_start_now_or_later_is_kept():
    assert resolve_window(NOW, start=NOW, end=END) == (NOW, END)
    assert resolve_window(NOW, start=NOW + S, end=END) == (NOW + S, END)


def test_naive_times_are_utc_and_other_zones_are_converted():
    plus2 = timezone(timedelta(hours=2))
    naive = resolve_window(NOW, start=START.replace(tzinfo=None), end=END.replace(tzinfo=None))
    zoned = resolve_window(NOW, start=START.astimezone(plus2), end=END.astimezone(plus2))
    assert naive == zoned == (START, END)
    assert all(moment.tzinfo == UTC for moment in naive + zoned)


def test_zones_do_not_make_an_agreeing_triple_dissonant():
    plus2 = timezone(timedelta(hours=2))
    assert resolve_window(NOW, start=START.astimezone(plus2), end=END, duration=DURATION) == (START, END)


# --- states -----------------------------------------------------------------------------------------------

ALLOWED = {
    ("w", "r"), ("w", "E"), ("w", "d"),
    ("r", "x"), ("r", "E"), ("r", "d"),
    ("E", "w"), ("E", "r"), ("E", "x"), ("E", "d"),
}


def test_state_sets():
    assert STATES == ("w", "r", "x", "d", "E")
    assert ACTIVE == ("w", "r", "E")
    assert FINAL == ("x", "d")
    assert set(ACTIVE) | set(FINAL) == set(STATES) and not set(ACTIVE) & set(FINAL)


@pytest.mark.parametrize("current", STATES)
@pytest.mark.parametrize("new", STATES)
def test_only_the_designed_transitions_are_allowed(current, new):
    if (current, new) in ALLOWED:
        check_transition(current, new)
    else:
        with pytest.raises(Conflict) as error:
            check_transition(current, new)
        assert f"from {current}" in error.value.detail and f"to {new}" in error.value.detail


@pytest.mark.parametrize("final", FINAL)
def test_nothing_leaves_exited_or_deleted(final):
    for new in STATES:
        with pytest.raises(Conflict):
            check_transition(final, new)


@pytest.mark.parametrize("pair", [("w", "q"), ("q", "w"), ("W", "r"), ("", "r"), (None, "d")])
def test_unknown_states_are_refused(pair):
    with pytest.raises(Conflict):
        check_transition(*pair)


@pytest.mark.parametrize("now, state", [
    (START - H, "w"), (START - S, "w"), (START, "r"), (START + H, "r"), (END - S, "r"), (END, "x"), (END + H, "x"),
])
def test_the_clock_gives_waiting_running_exited(now, state):
    assert state_by_time(START, END, now) == state


@pytest.mark.parametrize("state, now, expected", [
    ("w", NOW, START),
    ("w", START, START),
    ("w", START + 5 * S, START + 5 * S),  # late: due now
    ("r", START, END),
    ("r", START + H, END),
    ("r", END + 3 * S, END + 3 * S),
    ("E", NOW, END),  # in error before its start: its end is still its next move by time
    ("E", START + H, END),
    ("E", END + S, END + S),
    ("x", START + H, None),
    ("d", NOW, None),
    ("x", END + H, None),
])
def test_next_transition_with_a_frozen_clock(state, now, expected):
    assert next_transition(state, START, END, now) == expected


def test_following_next_transition_walks_the_states_in_order():
    state, now, seen = "w", NOW, ["w"]
    while (due := next_transition(state, START, END, now)) is not None:
        now = due
        new = state_by_time(START, END, now)
        check_transition(state, new)
        state = new
        seen.append(state)
    assert seen == ["w", "r", "x"] and now == END


# --- ACL --------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("entries, expected", [
    (["alice"], ["alice"]),
    (["alice", "@qe", "bob"], ["alice", "@qe", "bob"]),
    (("@qe",), ["@qe"]),
    ("alice,@qe", ["alice", "@qe"]),  # qrsub -u user,@group
    (["a.b-c_d"], ["a.b-c_d"]),
])
def test_acl_entries(entries, expected):
    assert check_acl(entries) == expected


@pytest.mark.parametrize("entries", [
    [], "", [""], ["@"], ["al ice"], ["alice "], [" alice"], ["al\tice"], ["a,b"], ["alice", "alice"],
    ["@qe", "@qe"], "alice,alice", "alice, bob", "alice,,bob", ["@@qe"], ["@q@e"], ["alice@example"], [None],
    [5], None, 5, {"alice"},
])
def test_bad_acl_entries_are_refused(entries):
    with pytest.raises(Invalid) as error:
        check_acl(entries)
    assert error.value.field == "acl"


def test_acl_messages_say_what_is_wrong():
    with pytest.raises(Invalid, match="named twice"):
        check_acl(["alice", "bob", "alice"])
    with pytest.raises(Invalid, match="space"):
        check_acl(["alice bob"])
    with pytest.raises(Invalid, match="at least one"):
        check_acl([])


@pytest.mark.parametrize("user, groups, acl, expected", [
    ("alice", [], ["alice"], True),
    ("alice", ["qe"], ["bob", "@qe"], True),
    ("alice", ["dev", "qe"], ["@qe"], True),
    ("alice", ["dev"], ["bob", "@qe"], False),
    ("alice", [], ["@alice"], False),  # a group named like the user is not the user
    ("qe", [], ["@qe"], False),
    ("alice", ["alice"], ["@alice"], True),
    ("Alice", [], ["alice"], False),
    ("alice", [], [], False),
    ("alice", ("qe",), ("@qe",), True),
])
def test_acl_membership(user, groups, acl, expected):
    assert in_acl(user, groups, acl) is expected


# --- mail (-m) -----------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("b", "b"), ("e", "e"), ("a", "a"), ("bea", "bea"), ("aeb", "bea"), ("ab", "ba"), ("ea", "ea"),
    ("b,e,a", "bea"), ("bb", "b"), ("n", "n"), ("nn", "n"), (" be ", "be"), ("", ""), (None, ""),
])
def test_mail_events(text, expected):
    assert check_mail_events(text) == expected


@pytest.mark.parametrize("text", ["s", "bs", "x", "B", "bn", "n,a", "b e", "bea!", 5, ["b"]])
def test_bad_mail_events(text):
    with pytest.raises(Invalid) as error:
        check_mail_events(text)
    assert error.value.field == "mail"


def test_mail_messages_say_what_is_allowed():
    with pytest.raises(Invalid, match="cannot be combined"):
        check_mail_events("ben")
    with pytest.raises(Invalid, match="b \\(begin\\), e \\(end\\), a \\(abort/error\\) or n \\(no mail\\)"):
        check_mail_events("bq")


@pytest.mark.parametrize("events, kind, expected", [
    ("bea", "b", True), ("bea", "e", True), ("bea", "a", True), ("a", "a", True), ("a", "b", False),
    ("be", "a", False), ("n", "b", False), ("n", "a", False), ("", "e", False), (None, "e", False),
])
def test_wants_mail(events, kind, expected):
    assert wants_mail(events, kind) is expected


@pytest.mark.parametrize("kind", ["n", "s", "", "bea"])
def test_wants_mail_knows_only_begin_end_abort(kind):
    with pytest.raises(ValueError):
        wants_mail("bea", kind)


# --- error handling (-he) ------------------------------------------------------------------------------------

@pytest.mark.parametrize("value, expected", [
    ("hard", "hard"), ("soft", "soft"), ("yes", "hard"), ("no", "soft"), ("YES", "hard"), (" No ", "soft"),
    ("Hard", "hard"), (True, "hard"), (False, "soft"), (None, "soft"),
])
def test_error_handling(value, expected):
    assert check_error_handling(value) == expected


@pytest.mark.parametrize("value", ["", "y", "n", "strict", "1", 1, 0, ["hard"]])
def test_bad_error_handling(value):
    with pytest.raises(Invalid) as error:
        check_error_handling(value)
    assert error.value.field == "error_handling"


# --- jobs bound to an AR ---------------------------------------------------------------------------------------

OFFSET = timedelta(minutes=10)  # window START..END is 3 h; bound work must end by END - 10 min


@pytest.mark.parametrize("now, runtime", [
    (NOW, H),  # before the start: it would start at the start
    (NOW, DURATION - OFFSET),  # exactly fits
    (START, DURATION - OFFSET),
    (START + H, H),
    (START + H, 2 * H - OFFSET),  # started now, exactly fits
    (START - S, DURATION - OFFSET),
])
def test_bound_runtime_that_fits(now, runtime):
    assert bound_runtime_problem(now, START, END, OFFSET, runtime) is None


def test_bound_work_needs_a_runtime_limit():
    assert bound_runtime_problem(NOW, START, END, OFFSET, None) == (
        "a job bound to an advance reservation needs a runtime limit")


@pytest.mark.parametrize("now", [NOW, START, START + H])
def test_bound_runtime_longer_than_the_window_minus_the_offset(now):
    problem = bound_runtime_problem(now, START, END, OFFSET, DURATION - OFFSET + S)
    assert problem is not None and "longer than" in problem
    assert "3h" in problem and "10m" in problem and "2h50m" in problem


def test_bound_runtime_longer_than_the_window_without_offset():
    problem = bound_runtime_problem(NOW, START, END, timedelta(0), DURATION + S)
    assert problem is not None and "longer than" in problem


def test_bound_runtime_that_would_not_end_in_time_if_started_now():
    problem = bound_runtime_problem(START + H, START, END, OFFSET, 2 * H - OFFSET + S)
    assert problem is not None
    assert "if started now" in problem and "2026-11-22T16:50:00Z" in problem and "1h50m" in problem


def test_bound_runtime_after_the_deadline_has_no_time_left():
    problem = bound_runtime_problem(END - 5 * M, START, END, OFFSET, M)
    assert problem is not None and "if started now" in problem and "0s are left" in problem


def test_bound_runtime_at_the_start_uses_the_start_not_now():
    # before its start a job would start at the start: a runtime that fits the window fits
    assert bound_runtime_problem(START - 10 * H, START, END, OFFSET, DURATION - OFFSET) is None
    problem = bound_runtime_problem(START - 10 * H, START, END, OFFSET, DURATION - OFFSET + S)
    assert problem is not None and "longer than" in problem


def test_bound_runtime_with_an_offset_as_long_as_the_window():
    problem = bound_runtime_problem(NOW, START, END, DURATION, S)
    assert problem is not None and "longer than" in problem


# --- accounting ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("now, systems, expected", [
    (NOW, 2, 0.0),  # before the start: nothing reserved yet
    (START, 2, 0.0),
    (START + H, 2, 7200.0),
    (START + H, 1, 3600.0),
    (END, 2, 3 * 7200.0),
    (END + 10 * H, 2, 3 * 7200.0),  # clipped at the end
    (START + H, 0, 0.0),
    (START + timedelta(milliseconds=500), 3, 1.5),
])
def test_reserved_seconds(now, systems, expected):
    assert reserved_seconds(START, END, now, systems) == pytest.approx(expected)


@pytest.mark.parametrize("intervals, expected", [
    ([], 0.0),
    ([(START, START + H)], 3600.0),
    ([(START - H, START + H)], 3600.0),  # clipped at the start
    ([(END - H, END + H)], 3600.0),  # clipped at the end
    ([(START - H, END + H)], 3 * 3600.0),  # covers it all
    ([(NOW, START)], 0.0),  # before: touches the start only
    ([(END, END + H)], 0.0),  # after
    ([(NOW, NOW + H)], 0.0),
    ([(START, START + H), (START, START + H)], 7200.0),  # two systems at once each count
    ([(START, START + H), (START + 2 * H, END)], 7200.0),
    ([(START + H, None)], 2 * 3600.0),  # open: to the end
    ([(START + 2 * H, START + H)], 0.0),  # backwards: nothing
])
def test_overlap_seconds(intervals, expected):
    assert overlap_seconds(intervals, START, END) == pytest.approx(expected)


def test_overlap_seconds_takes_any_iterable():
    assert overlap_seconds(((START, START + M) for _ in range(3)), START, END) == pytest.approx(180.0)


# --- Grid Engine's time form: [[CC]YY]MMDDhhmm[.SS] -----------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("202611221400", datetime(2026, 11, 22, 14, 0)),  # CCYYMMDDhhmm
    ("202611221400.30", datetime(2026, 11, 22, 14, 0, 30)),
    ("2611221400", datetime(2026, 11, 22, 14, 0)),  # YYMMDDhhmm
    ("2611221400.05", datetime(2026, 11, 22, 14, 0, 5)),
    ("6901010000", datetime(2069, 1, 1)),  # YY below 70: 20YY, as Grid Engine
    ("7001010000", datetime(1970, 1, 1)),
    ("9912312359", datetime(1999, 12, 31, 23, 59)),
    ("0002290000", datetime(2000, 2, 29)),
    ("11221400", datetime(2026, 11, 22, 14, 0)),  # MMDDhhmm: the current year
    ("11221400.59", datetime(2026, 11, 22, 14, 0, 59)),
    ("01010000", datetime(2026, 1, 1)),
    ("12312359.00", datetime(2026, 12, 31, 23, 59)),
    ("  202611221400  ", datetime(2026, 11, 22, 14, 0)),
    ("210002281200", datetime(2100, 2, 28, 12, 0)),
])
def test_grid_engine_times_are_utc(text, expected):
    parsed = parse_ge_time(text, NOW)
    assert parsed == expected.replace(tzinfo=UTC)
    assert parsed.tzinfo == UTC


def test_without_a_year_the_current_year_in_utc():
    # 00:30 on New Year's Day at +02:00 is still the old year in UTC
    now = datetime(2027, 1, 1, 0, 30, tzinfo=timezone(timedelta(hours=2)))
    assert parse_ge_time("06011200", now) == datetime(2026, 6, 1, 12, tzinfo=UTC)
    assert parse_ge_time("06011200", datetime(2030, 3, 1, tzinfo=UTC)) == datetime(2030, 6, 1, 12, tzinfo=UTC)


@pytest.mark.parametrize("text, expected", [
    ("2026-11-22T14:00:00Z", datetime(2026, 11, 22, 14, 0, tzinfo=UTC)),
    ("2026-11-22T15:00:00+01:00", datetime(2026, 11, 22, 14, 0, tzinfo=UTC)),
    ("2026-11-22T14:00:30.5Z", datetime(2026, 11, 22, 14, 0, 30, 500000, tzinfo=UTC)),
])
def test_rfc_3339_is_accepted_too(text, expected):
    assert parse_ge_time(text, NOW, "start") == expected


@pytest.mark.parametrize("text", [
    "", "   ", "tomorrow", "1122140", "112214000", "26112214001", "2026112214000", "20261122140000",
    "11221400.5", "11221400.123", "11221400.", ".30", "1122 1400", "11221400.aa", "+11221400",
    "13011200",  # month 13
    "00011200",  # month 0
    "11311200",  # 31 November
    "02291200",  # 29 February 2026
    "11002359",  # day 0
    "11222400",  # hour 24
    "11221460",  # minute 60
    "11221400.60",  # second 60
    "202602291200",
    "2026-11-22T14:00:00",  # RFC 3339 without a zone
    "2026-13-22T14:00:00Z",
    None, 202611221400, datetime(2026, 11, 22, tzinfo=UTC),
])
def test_bad_times_name_the_field(text):
    with pytest.raises(Invalid) as error:
        parse_ge_time(text, NOW, "start")
    assert error.value.field == "start"


@pytest.mark.parametrize("text", ["tomorrow", "1122140", "11221400.5", ""])
def test_bad_times_say_the_expected_forms(text):
    with pytest.raises(Invalid) as error:
        parse_ge_time(text, NOW, "end")
    assert "[[CC]YY]MMDDhhmm[.SS]" in reason(error) and "RFC 3339" in reason(error)


def test_impossible_dates_say_why():
    with pytest.raises(Invalid) as error:
        parse_ge_time("11311200", NOW, "end")
    assert "no such time" in reason(error) and "[[CC]YY]MMDDhhmm[.SS]" in reason(error)


def test_rfc_3339_errors_are_its_own():
    with pytest.raises(Invalid, match="no time zone"):
        parse_ge_time("2026-11-22T14:00:00", NOW, "start")


def test_the_field_defaults_to_time():
    with pytest.raises(Invalid) as error:
        parse_ge_time("soon", NOW)
    assert error.value.field == "time"


# --- Grid Engine's durations: h:m:s or seconds --------------------------------------------------------------------

@pytest.mark.parametrize("text, seconds", [
    ("2:30:00", 9000), ("0:45:0", 2700), ("0:0:1", 1), ("1:0:1", 3601), ("1::1", 3601), ("::30", 30),
    ("2::", 7200), ("48:00:00", 172800), ("0:90:0", 5400), ("00:00:05", 5), (" 1:00:00 ", 3600),
    ("90", 90), ("3600", 3600), (90, 90), (1.5, 1.5),
    ("4h", 14400), ("30m", 1800), ("PT4H", 14400), ("1h30m", 5400), ("2d", 172800),
])
def test_grid_engine_durations(text, seconds):
    assert parse_ge_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", [
    "0:0:0", "::", "0::", "1:2:3:4", "a:b:c", "-1:00:00", "1:-5:00", "1 :00:00", "", "soon", "0", 0, -5, None,
    True, "unlimited",
])
def test_bad_grid_engine_durations_name_the_field(text):
    with pytest.raises(Invalid) as error:
        parse_ge_duration(text, "duration")
    assert error.value.field == "duration"


def test_the_duration_field_defaults_to_duration():
    with pytest.raises(Invalid) as error:
        parse_ge_duration("0:0:0")
    assert error.value.field == "duration" and "positive" in reason(error)
