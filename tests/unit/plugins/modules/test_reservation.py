# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.lablease.lab.plugins.modules import reservation


def test_reserve_a_free_system(api, run):
    api.add_system("s1.lab.test")
    result, failed = run(reservation.main, {"system": "s1.lab.test", "duration": "4h"})
    assert not failed and result["changed"]
    assert result["reservation"]["id"] == 1 and result["reservation"]["end"]
    posted = [c for c in api.writes if c[:2] == ("POST", "/reservations")]
    assert len(posted) == 1
    assert posted[0][2]["duration"] == "4h"
    assert posted[0][2]["request_id"] == reservation.derive_request_id("s1.lab.test", None, 0)


def test_held_by_me_is_not_changed(api, run):
    api.add_system("s1.lab.test")
    api.add_reservation("s1.lab.test")
    result, failed = run(reservation.main, {"system": "s1.lab.test", "duration": "1h"})
    assert not failed and not result["changed"]
    assert api.writes == []


def test_a_later_end_extends(api, run):
    api.add_system("s1.lab.test")
    held = api.add_reservation("s1.lab.test", hours=1)
    result, failed = run(reservation.main, {"system": "s1.lab.test", "end": "2030-01-01T00:00:00Z"}, diff=True)
    assert not failed and result["changed"]
    assert api.writes == [("PATCH", "/reservations/%d" % held["id"], {"end": "2030-01-01T00:00:00Z"})]
    assert result["diff"]["after"]["end"] == "2030-01-01T00:00:00Z"


def test_heartbeat_none_stops_the_heartbeats_of_a_held_reservation(api, run):
    api.add_system("s1.lab.test")
    held = api.add_reservation("s1.lab.test", hours=1)
    held["heartbeat"] = 900
    args = {"system": "s1.lab.test", "end": "2030-01-01T00:00:00Z", "heartbeat": "none"}
    result, failed = run(reservation.main, args)
    assert not failed and result["changed"]
    # one PATCH: the end and the interval change together
    assert api.writes == [("PATCH", "/reservations/%d" % held["id"], {"end": "2030-01-01T00:00:00Z", "heartbeat": None})]
    assert result["reservation"]["heartbeat"] is None
    again, failed = run(reservation.main, args)
    assert not failed and not again["changed"] and len(api.writes) == 1


def test_a_different_heartbeat_changes_it(api, run):
    api.add_system("s1.lab.test")
    held = api.add_reservation("s1.lab.test", hours=1)
    result, failed = run(reservation.main, {"system": "s1.lab.test", "heartbeat": "10m"})
    assert not failed and result["changed"] and result["reservation"]["heartbeat"] == 600
    assert api.writes == [("PATCH", "/reservations/%d" % held["id"], {"heartbeat": "10m"})]
    result, failed = run(reservation.main, {"system": "s1.lab.test", "heartbeat": "none", "keepalive": True})
    assert failed and result["msg"] == "keepalive needs a heartbeat; heartbeat: none stops them"


def test_a_longer_duration_counts_from_the_start(api, run):
    api.add_system("s1.lab.test")
    api.add_reservation("s1.lab.test", hours=1)
    result, failed = run(reservation.main, {"system": "s1.lab.test", "duration": "3h"})
    assert result["changed"]
    assert result["reservation"]["end"] == "2026-11-22T12:55:00Z"


def test_held_by_someone_else_names_them(api, run):
    api.add_system("s1.lab.test")
    api.add_reservation("s1.lab.test", user="bob")
    result, failed = run(reservation.main, {"system": "s1.lab.test"})
    assert failed
    assert result["msg"] == "s1.lab.test is reserved by bob until 2026-11-22T13:55:00Z"


def test_check_mode_writes_nothing(api, run):
    api.add_system("s1.lab.test")
    result, failed = run(reservation.main, {"system": "s1.lab.test", "duration": "2h"}, check=True, diff=True)
    assert not failed and result["changed"]
    assert api.writes == []
    assert result["reservation"]["user"] == "alice"
    assert result["diff"]["before"] == {}


def test_unknown_system(api, run):
    result, failed = run(reservation.main, {"system": "nope.lab.test"})
    assert failed
    assert "no system named nope.lab.test" in result["msg"]


def test_bad_duration_fails_before_any_call(api, run):
    api.add_system("s1.lab.test")
    result, failed = run(reservation.main, {"system": "s1.lab.test", "duration": "soon"})
    assert failed and "is not a duration" in result["msg"]
    assert api.calls == []


def test_absent_returns_and_then_is_not_changed(api, run):
    api.add_system("s1.lab.test")
    held = api.add_reservation("s1.lab.test")
    result, failed = run(reservation.main, {"system": "s1.lab.test", "state": "absent"})
    assert result["changed"] and result["returned"] == [held["id"]]
    assert result["reservation"]["state"] == "returned"
    result, failed = run(reservation.main, {"system": "s1.lab.test", "state": "absent"})
    assert not result["changed"] and result["returned"] == []


def test_absent_in_check_mode_returns_nothing(api, run):
    api.add_system("s1.lab.test")
    api.add_reservation("s1.lab.test")
    result, failed = run(reservation.main, {"system": "s1.lab.test", "state": "absent"}, check=True)
    assert result["changed"]
    assert api.writes == []


def test_a_stale_request_id_books_anew(api, run):
    """The derived id of an ended reservation is not reused: the next run books a new one."""
    api.add_system("s1.lab.test")
    old = reservation.derive_request_id("s1.lab.test", None, 0)
    api.add_reservation("s1.lab.test", returned=True, request_id=old)
    result, failed = run(reservation.main, {"system": "s1.lab.test", "duration": "1h"})
    assert result["changed"] and result["reservation"]["id"] == 2
    assert result["reservation"]["request_id"] == reservation.derive_request_id("s1.lab.test", None, 1)


def test_keepalive_without_a_reservation_fails(api, run):
    api.add_system("s1.lab.test")
    result, failed = run(reservation.main, {"system": "s1.lab.test", "keepalive": True})
    assert failed and "no reservation on s1.lab.test to keep alive" in result["msg"]
    assert api.writes == []


def test_no_token(api, run, monkeypatch):
    monkeypatch.delenv("LABLEASE_TOKEN", raising=False)
    result, failed = run(reservation.main, {"system": "s1.lab.test", "token": None})
    assert failed and "LABLEASE_TOKEN" in result["msg"]


def test_derived_request_id_is_stable():
    assert reservation.derive_request_id("S1.lab.test") == reservation.derive_request_id("s1.lab.test")
    assert reservation.derive_request_id("s1.lab.test", None, 3) != reservation.derive_request_id("s1.lab.test", None, 4)


def test_reservation_info_mine_and_by_system(api, run):
    from ansible_collections.lablease.lab.plugins.modules import reservation_info

    api.add_system("s1.lab.test")
    api.add_reservation("s1.lab.test")
    result, failed = run(reservation_info.main, {})
    assert not failed and not result["changed"] and [r["system"] for r in result["reservations"]] == ["s1.lab.test"]
    assert ("GET", "/reservations", None) in api.calls
    result, failed = run(reservation_info.main, {"id": 1})
    assert result["reservations"][0]["id"] == 1
    result, failed = run(reservation_info.main, {"id": 99})
    assert result["reservations"] == []


def test_wait_blocks_until_the_system_is_granted(api, run):
    api.add_system("s1.lab.test")
    api.add_reservation("s1.lab.test", user="bob")
    result, failed = run(reservation.main, {"system": "s1.lab.test", "duration": "4h", "wait": True})
    assert not failed and result["changed"]
    assert result["reservation"]["state"] == "active" and result["reservation"]["system"] == "s1.lab.test"
    [posted] = [c for c in api.writes if c[:2] == ("POST", "/reservations")]
    assert posted[2]["wait"] is True and posted[2]["duration"] == "4h"


def test_wait_sends_healthy_within(api, run):
    api.add_system("s1.lab.test")
    result, failed = run(reservation.main, {"system": "s1.lab.test", "wait": True, "healthy_within": "24h"})
    assert not failed and result["changed"]
    [posted] = [c for c in api.writes if c[:2] == ("POST", "/reservations")]
    assert posted[2]["wait"] is True and posted[2]["healthy_within"] == "24h"


def test_wait_is_idempotent_once_granted(api, run):
    api.add_system("s1.lab.test")
    api.add_reservation("s1.lab.test", user="bob")
    run(reservation.main, {"system": "s1.lab.test", "wait": True})
    writes = len(api.writes)
    result, failed = run(reservation.main, {"system": "s1.lab.test", "wait": True})
    assert not failed and not result["changed"] and len(api.writes) == writes


def test_wait_timeout_leaves_the_queue_and_fails(api, run, monkeypatch):
    clock = iter(range(0, 100000, 10))
    monkeypatch.setattr(reservation.time, "time", lambda: next(clock))
    api.add_system("s1.lab.test")
    api.add_reservation("s1.lab.test", user="bob")
    api.grant_after = None  # never granted
    result, failed = run(reservation.main, {"system": "s1.lab.test", "wait": True, "wait_timeout": 60})
    assert failed and "was not granted within 60 seconds (position 1" in result["msg"]
    assert api.writes[-1] == ("DELETE", "/reservations/2", None)
    assert api.reservations[1]["state"] == "cancelled"


def test_wait_in_check_mode_writes_nothing(api, run):
    held = api.add_reservation("s1.lab.test", user="bob")
    api.add_system("s1.lab.test", reservation={"id": held["id"], "user": "bob", "start": held["start"],
                                               "end": held["end"]})
    result, failed = run(reservation.main, {"system": "s1.lab.test", "wait": True}, check=True)
    assert not failed and result["changed"] and result["reservation"]["state"] == "waiting"
    assert api.writes == []


def test_wait_with_start_is_refused_before_any_call(api, run):
    result, failed = run(reservation.main, {"system": "s1.lab.test", "wait": True, "start": "2030-01-01T00:00:00Z"})
    assert failed and "wait cannot be combined with start or end" in result["msg"]
    assert api.calls == []
