# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible_collections.lablease.lab.plugins.module_utils.client import LableaseError
from ansible_collections.lablease.lab.plugins.modules import advance_reservation, advance_reservation_info

REQUIRES = {"and": [{"field": "arch", "op": "=", "value": "x86_64"}, {"field": "memory_mb", "op": ">=", "value": 8192}]}
ARGS = {"name": "nightly-perf", "start": "2026-11-22T20:00:00Z", "duration": "8h", "requires": REQUIRES,
        "pools": ["perf"], "count": 2, "acl": ["alice", "@qe"], "mail_events": "eb", "mail_to": ["perf@example.com"],
        "error_handling": "hard", "account": "perf-team"}
BODY = {"name": "nightly-perf", "start": "2026-11-22T20:00:00Z", "duration": 28800, "requires": REQUIRES,
        "pools": ["perf"], "count": 2, "acl": ["alice", "@qe"], "mail": {"events": "be", "to": ["perf@example.com"]},
        "error_handling": "hard", "account": "perf-team"}


def lab(api, arusers=("alice",)):
    """a, b and c (16 GiB each); a and b in pool perf; alice in arusers."""
    api.groups["arusers"] = {"name": "arusers", "description": None, "owners": ["admin"], "members": list(arusers),
                             "webhook_url": None}
    for fqdn in ("a.lab.test", "b.lab.test", "c.lab.test"):
        api.add_system(fqdn, memory_mb=16384)
    api.pools["perf"] = {"name": "perf", "description": None, "owner_group": None,
                         "systems": ["a.lab.test", "b.lab.test"]}


def granted(api, **extra):
    """alice's nightly-perf as ARGS asked for it."""
    fields = dict(requires=REQUIRES, pools=["perf"], acl=["alice", "@qe"], error_handling="hard", account="perf-team",
                  mail={"events": "be", "to": ["perf@example.com"]})
    fields.update(extra)
    return api.add_ar("nightly-perf", ["a.lab.test", "b.lab.test"], start=api.moment("2026-11-22T20:00:00Z"),
                      count=2, **fields)


def test_check_mode_validates_then_creates_then_keeps(api, run):
    lab(api)
    result, failed = run(advance_reservation.main, ARGS, check=True, diff=True)
    assert not failed and result["changed"] and api.ars == {}
    assert api.writes == [] and api.calls[-1] == ("POST", "/advance-reservations", BODY)  # with ?validate_only=true
    predicted = result["advance_reservation"]
    assert predicted["id"] is None and predicted["systems"] == ["a.lab.test", "b.lab.test"]
    assert predicted["end"] == "2026-11-23T04:00:00Z" and predicted["duration"] == 28800 and predicted["state"] == "w"
    assert predicted["owner"] == "alice"
    assert result["diff"]["after"]["mail"] == {"events": "be", "to": ["perf@example.com"]}
    result, failed = run(advance_reservation.main, ARGS, diff=True)
    assert not failed and result["changed"] and api.writes[-1] == ("POST", "/advance-reservations", BODY)
    ar = result["advance_reservation"]
    assert ar["id"] == 1 and ar["systems"] == ["a.lab.test", "b.lab.test"] and ar["end"] == "2026-11-23T04:00:00Z"
    assert result["diff"]["before"] == {} and result["diff"]["after"]["acl"] == ["@qe", "alice"]
    # the same again - and the same said otherwise - is not changed
    same = dict(ARGS, acl=["@qe", "alice"], mail_events="b,e", end="2026-11-23T04:00:00Z",
                requires={"and": [{"field": "arch", "op": "=", "value": "x86_64"},
                                  {"field": "memory_mb", "op": ">=", "value": "8192"}]})
    for args in (ARGS, same, {"name": "nightly-perf"}, {"name": "nightly-perf", "duration": "PT8H"}):
        result, failed = run(advance_reservation.main, args, diff=True)
        assert not failed and not result["changed"], args
        assert result["advance_reservation"]["id"] == 1 and result["diff"]["before"] == result["diff"]["after"]
    result, failed = run(advance_reservation.main, ARGS, check=True)
    assert not result["changed"]
    assert len(api.writes) == 1


def test_change_acl_end_and_mail(api, run):
    lab(api)
    granted(api)
    args = {"name": "nightly-perf", "acl": ["alice", "bob", "@qe"]}
    result, failed = run(advance_reservation.main, args, check=True, diff=True)
    assert result["changed"] and api.writes == [] and result["advance_reservation"]["acl"] == ["alice", "bob", "@qe"]
    result, failed = run(advance_reservation.main, args, diff=True)
    assert result["changed"] and api.writes == [("PATCH", "/advance-reservations/1", {"acl": ["alice", "bob", "@qe"]})]
    assert result["diff"]["before"]["acl"] == ["@qe", "alice"]
    assert result["diff"]["after"]["acl"] == ["@qe", "alice", "bob"]
    result, failed = run(advance_reservation.main, args)
    assert not result["changed"] and len(api.writes) == 1
    # an acl that differs only by the owner is the same
    result, failed = run(advance_reservation.main, {"name": "nightly-perf", "acl": ["bob", "@qe"]})
    assert not result["changed"] and len(api.writes) == 1

    # a duration counts from the AR's start; longer or shorter, only it is sent
    result, failed = run(advance_reservation.main, {"name": "nightly-perf", "duration": "10h"}, check=True, diff=True)
    assert result["changed"] and len(api.writes) == 1 and result["advance_reservation"]["end"] == "2026-11-23T06:00:00Z"
    assert result["diff"]["before"]["end"] == "2026-11-23T04:00:00Z"
    result, failed = run(advance_reservation.main, {"name": "nightly-perf", "duration": "10h", "acl": ["alice"]},
                         diff=True)
    assert result["changed"] and api.writes[-1] == ("PATCH", "/advance-reservations/1",
                                                    {"duration": 36000, "acl": ["alice"]})
    assert result["advance_reservation"]["end"] == "2026-11-23T06:00:00Z"
    result, failed = run(advance_reservation.main, {"name": "nightly-perf", "end": "2026-11-23T02:00:00+00:00"})
    assert result["changed"] and api.writes[-1] == ("PATCH", "/advance-reservations/1", {"end": "2026-11-23T02:00:00Z"})
    assert result["advance_reservation"]["duration"] == 6 * 3600

    # mail: the part not given is kept; n and "" are the same
    result, failed = run(advance_reservation.main, {"name": "nightly-perf", "mail_to": ["qe@example.com"]})
    assert result["changed"] and api.writes[-1] == ("PATCH", "/advance-reservations/1",
                                                    {"mail": {"events": "be", "to": ["qe@example.com"]}})
    result, failed = run(advance_reservation.main, {"name": "nightly-perf", "mail_events": "n"})
    assert result["changed"] and api.writes[-1][2] == {"mail": {"events": "n", "to": ["qe@example.com"]}}
    api.ars[1]["mail"]["events"] = ""
    result, failed = run(advance_reservation.main, {"name": "nightly-perf", "mail_events": "n"})
    assert not result["changed"] and len(api.writes) == 5


def test_a_new_end_that_collides_fails_with_the_servers_words(api, run):
    lab(api)
    granted(api)
    api.add_ar("other", ["a.lab.test"], owner="bob", start=api.moment("2026-11-23T05:00:00Z"))
    result, failed = run(advance_reservation.main, {"name": "nightly-perf", "duration": "10h"})
    assert failed and result["status"] == 409 and api.ars[1]["end"] == "2026-11-23T04:00:00Z"
    assert result["msg"] == ("advance reservation nightly-perf (id 1): a.lab.test is booked by advance reservation 2 "
                             "from 2026-11-23T05:00:00Z")


@pytest.mark.parametrize("change, field", [
    ({"count": 3}, "count"),
    ({"pools": ["perf", "gpus"]}, "pools"),
    ({"start": "2026-11-22T21:00:00Z"}, "start"),
    ({"requires": {"field": "arch", "op": "=", "value": "aarch64"}}, "requires"),
    ({"error_handling": "soft"}, "error_handling"),
    ({"account": "qe"}, "account"),
])
def test_what_cannot_change_fails(api, run, change, field):
    lab(api)
    granted(api)
    for check in (True, False):
        result, failed = run(advance_reservation.main, dict(ARGS, **change), check=check)
        assert failed and api.writes == [], change
        assert result["msg"].startswith("advance reservation nightly-perf (id 1) cannot change %s once granted: %s is "
                                        % (field, field))
        assert result["msg"].endswith("; delete it (state=absent) and create it again")


def test_hosts_cannot_change_and_the_message_says_both(api, run):
    lab(api)
    granted(api, hosts=["a.lab.test", "b.lab.test"], requires=None, pools=[])
    result, failed = run(advance_reservation.main, {"name": "nightly-perf", "hosts": ["B.lab.test", "a.lab.test"]})
    assert not failed and not result["changed"]
    result, failed = run(advance_reservation.main, {"name": "nightly-perf", "hosts": ["a.lab.test", "c.lab.test"],
                                                    "count": 3, "duration": "9h"})
    assert failed and api.writes == []
    assert result["msg"] == (
        "advance reservation nightly-perf (id 1) cannot change hosts, count once granted: hosts is "
        "[a.lab.test, b.lab.test], the task asks for [a.lab.test, c.lab.test]; count is 2, the task asks for 3; "
        "delete it (state=absent) and create it again")


def test_absent_deletes_and_force_aborts_bound_work(api, run):
    lab(api)
    granted(api)
    gone = {"name": "nightly-perf", "state": "absent"}
    result, failed = run(advance_reservation.main, gone, check=True, diff=True)
    assert result["changed"] and api.writes == [] and result["deleted"] == [1]
    assert result["diff"]["before"]["systems"] == ["a.lab.test", "b.lab.test"] and result["diff"]["after"] == {}
    api.ar_bound.add(1)
    result, failed = run(advance_reservation.main, gone)
    assert failed and result["status"] == 409 and api.ars[1]["state"] == "w"
    assert result["msg"] == ("advance reservation nightly-perf (id 1): advance reservation 1 has bound work (job 3); "
                             "delete with force=true to abort it first")
    api.bound_detail = "advance reservation %d has bound work (job 3)"  # a detail that does not say what to do
    result, failed = run(advance_reservation.main, gone)
    assert failed and result["msg"] == ("advance reservation nightly-perf (id 1): advance reservation 1 has bound "
                                        "work (job 3) (force=true aborts the work bound to it and deletes it)")
    result, failed = run(advance_reservation.main, dict(gone, force=True), diff=True)
    assert result["changed"] and result["advance_reservation"] is None and result["deleted"] == [1]
    assert api.ars[1]["state"] == "d" and 1 not in api.ar_bound  # the fake honours ?force=true only
    assert api.writes[-1] == ("DELETE", "/advance-reservations/1", None)
    result, failed = run(advance_reservation.main, gone)
    assert not result["changed"] and result["deleted"] == [] and len(api.writes) == 3


def test_only_active_ars_of_the_caller_count(api, run):
    lab(api)
    granted(api, state="x")
    api.add_ar("nightly-perf", ["c.lab.test"], owner="bob")
    result, failed = run(advance_reservation.main, {"name": "nightly-perf", "state": "absent"})
    assert not result["changed"] and api.writes == []
    result, failed = run(advance_reservation.main, ARGS)
    assert result["changed"] and result["advance_reservation"]["id"] == 3
    # two active ARs with the name: present refuses to guess, absent deletes both
    api.add_ar("nightly-perf", ["c.lab.test"], start=api.moment("2026-11-24T00:00:00Z"))
    result, failed = run(advance_reservation.main, ARGS)
    assert failed and result["msg"] == ("several active advance reservations are named nightly-perf (ids 3, 4); "
                                        "delete them (state=absent) and create one again")
    result, failed = run(advance_reservation.main, {"name": "nightly-perf", "state": "absent"}, diff=True)
    assert result["changed"] and result["deleted"] == [3, 4] and len(result["diff"]["before"]["advance_reservations"]) == 2
    assert api.ars[2]["state"] == "w"


def test_not_grantable_fails_with_the_servers_reasons_in_check_mode_too(api, run):
    lab(api)
    api.add_ar("other", ["b.lab.test"], owner="bob", start=api.moment("2026-11-22T18:00:00Z"))
    # the detail already says what was ruled out: only the busy systems are added
    message = ("advance reservation nightly-perf cannot be granted: 2 system(s) asked for, 1 eligible and free; "
               "ruled out: 1 not in the pools asked for (busy: b.lab.test from 2026-11-22T18:00:00Z until "
               "2026-11-23T02:00:00Z)")
    for check in (True, False):
        result, failed = run(advance_reservation.main, ARGS, check=check)
        assert failed and result["status"] == 409 and result["msg"] == message
        assert result["problem"]["reasons"]["busy"][0]["system"] == "b.lab.test"
    assert len(api.ars) == 1


def test_who_may_and_how_many(api, run):
    lab(api, arusers=())
    for check in (True, False):
        result, failed = run(advance_reservation.main, ARGS, check=check)
        assert failed and result["status"] == 403
        assert result["msg"] == ("not allowed: only administrators and members of the arusers group may create "
                                 "advance reservations")
    api.groups["arusers"]["members"].append("alice")
    api.add_ar("other", ["c.lab.test"], owner="bob")
    api.max_ars = 1
    result, failed = run(advance_reservation.main, ARGS, check=True)
    assert failed and result["status"] == 429 and result["msg"] == (
        "advance reservation nightly-perf refused: 1 advance reservations are active, the limit "
        "(max_advance_reservations) is 1")
    api.max_ars = 0
    result, failed = run(advance_reservation.main, ARGS)
    assert failed and result["status"] == 429 and result["msg"] == (
        "advance reservation nightly-perf refused: advance reservations are switched off on this server "
        "(max_advance_reservations: 0)")
    assert len(api.ars) == 1 and [c[0] for c in api.writes] == ["POST"] * 2  # and two only validated


def test_refusal_hints_are_not_repeated():
    forbidden = LableaseError("not allowed: admins only", status=403)
    assert advance_reservation.refusal(forbidden, "x") == (
        "not allowed: admins only (only administrators and members of the arusers group may create advance "
        "reservations)")
    assert advance_reservation.refusal(LableaseError("too many", status=429), "x") == (
        "advance reservation x refused: too many (the server's max_advance_reservations limit of active advance "
        "reservations is reached - 0 turns them off; delete one that is no longer needed or wait until one ends)")
    assert advance_reservation.not_granted("x", "", {"ruled_out": {"broken": 2}, "busy": [
        {"system": "a.lab.test", "from": "2026-11-22T18:00:00Z", "until": None}]}) == (
        "advance reservation x cannot be granted: no reason given (ruled out: broken (2); busy: a.lab.test from "
        "2026-11-22T18:00:00Z until further notice)")
    assert advance_reservation.refusal(LableaseError("boom", status=500), "x") == "boom"


@pytest.mark.parametrize("args, message", [
    ({"name": " "}, "name: give the advance reservation a name (it is how the task finds it again)"),
    ({"end": "2026-11-22T19:00:00Z"}, "end: 2026-11-22T19:00:00Z is not after start 2026-11-22T20:00:00Z"),
    ({"end": "2026-11-23T05:00:00Z"}, "start, end and duration disagree: from 2026-11-22T20:00:00Z to "
                                      "2026-11-23T05:00:00Z is 32400 s, duration says 28800 s; give two of them"),
    ({"duration": "soonish"}, "duration: 'soonish' is not a duration (try 4h, 30m, 2d, 1w, 1h30m, PT4H or 1:30:00)"),
    ({"start": "tonight"}, "start: 'tonight' is not an RFC 3339 time such as 2026-11-22T14:00:00Z"),
    ({"mail_events": "bx"}, "mail_events: 'bx' is not a set of mail events: any of b (begin), e (end) and a (error), "
                            "for example bea, or n for none"),
    ({"count": 0}, "count: must be 1 or more, not 0"),
    ({"duration": None}, "end or duration: needed to create advance reservation nightly-perf"),
    ({"hosts": ["a.lab.test"]}, "parameters are mutually exclusive: hosts|requires"),
])
def test_bad_input_is_refused_before_writing(api, run, args, message):
    lab(api)
    result, failed = run(advance_reservation.main, dict(ARGS, **args))
    assert failed and result["msg"] == message and api.writes == []


def test_info_lists_by_user_name_state_and_id(api, run):
    lab(api)
    granted(api)
    api.add_ar("nightly-perf", ["c.lab.test"], state="x")
    api.add_ar("smoke", ["c.lab.test"], owner="bob", state="E", error_reasons=["c.lab.test is broken"])
    result, failed = run(advance_reservation_info.main, {})
    assert not failed and not result["changed"] and [a["id"] for a in result["advance_reservations"]] == [1, 2]
    result, failed = run(advance_reservation_info.main, {"name": "nightly-perf", "state": ["w", "r", "E"]})
    assert [a["id"] for a in result["advance_reservations"]] == [1]
    for everybody in ("*", "all"):
        result, failed = run(advance_reservation_info.main, {"user": everybody, "state": ["E"]})
        assert [a["error_reasons"] for a in result["advance_reservations"]] == [["c.lab.test is broken"]]
    result, failed = run(advance_reservation_info.main, {"user": "bob"})
    assert [a["name"] for a in result["advance_reservations"]] == ["smoke"]
    result, failed = run(advance_reservation_info.main, {"id": 3, "user": "alice"}, check=True)
    assert [a["owner"] for a in result["advance_reservations"]] == ["bob"]
    result, failed = run(advance_reservation_info.main, {"id": 9})
    assert not failed and result["advance_reservations"] == []
    result, failed = run(advance_reservation_info.main, {"id": 1, "name": "smoke"})
    assert failed and result["msg"] == "parameters are mutually exclusive: id|name"
    assert [c[1] for c in api.calls] == ["/advance-reservations"] * 5 + ["/advance-reservations/3",
                                                                         "/advance-reservations/9"]
    assert api.writes == []
