# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The modules' side of holds: a pool's automation_floor, a purpose, force, an AR's release."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.lablease.lab.plugins.modules import advance_reservation, loan, pool, reservation


def test_pool_automation_floor_check_mode_idempotent_and_diff(api, run):
    args = {"name": "ci", "automation_floor": 2}
    result, failed = run(pool.main, args, check=True)
    assert result["changed"] and result["pool"]["automation_floor"] == 2 and api.writes == []
    result, failed = run(pool.main, args)
    assert result["changed"] and api.pools["ci"]["automation_floor"] == 2
    writes = len(api.writes)
    result, failed = run(pool.main, args)
    assert not result["changed"] and len(api.writes) == writes
    result, failed = run(pool.main, {"name": "ci", "description": "x"})  # not given: the floor is left alone
    assert api.pools["ci"]["automation_floor"] == 2
    result, failed = run(pool.main, {"name": "ci", "automation_floor": 0}, diff=True)
    assert result["changed"] and api.pools["ci"]["automation_floor"] == 0
    assert (result["diff"]["before"]["automation_floor"], result["diff"]["after"]["automation_floor"]) == (2, 0)


def test_reservation_and_loan_send_a_purpose(api, run):
    api.add_system("s1.lab.test")
    api.add_system("s2.lab.test")
    result, failed = run(reservation.main, {"system": "s1.lab.test", "purpose": "bisect"}, check=True)
    assert result["reservation"]["purpose"] == "bisect" and api.writes == []
    result, failed = run(reservation.main, {"system": "s1.lab.test", "purpose": "bisect", "force": True})
    assert not failed and result["reservation"]["purpose"] == "bisect"
    assert (api.last_reserve_body["purpose"], api.last_reserve_body["force"]) == ("bisect", True)
    result, failed = run(loan.main, {"system": "s2.lab.test", "recipient": "bob", "purpose": "drivers"})
    assert result["changed"] and api.loans["s2.lab.test"]["purpose"] == "drivers"
    result, failed = run(loan.main, {"system": "s2.lab.test", "recipient": "bob", "purpose": "drivers"})
    assert not result["changed"]


def test_advance_reservation_release_is_idempotent(api, run):
    api.groups["arusers"] = {"name": "arusers", "description": None, "owners": ["admin"], "members": ["alice"],
                             "webhook_url": None}
    for fqdn in ("a.lab.test", "b.lab.test"):
        api.add_system(fqdn)
    api.add_ar("perf", ["a.lab.test", "b.lab.test"], start=api.moment("2026-11-22T20:00:00Z"), count=2)
    args = {"name": "perf", "release": ["B.lab.test"]}
    result, failed = run(advance_reservation.main, args, check=True, diff=True)
    assert result["changed"] and result["advance_reservation"]["systems"] == ["a.lab.test"] and api.writes == []
    assert result["diff"]["after"]["systems"] == ["a.lab.test"]
    result, failed = run(advance_reservation.main, args)
    assert result["changed"] and ("PATCH", "/advance-reservations/1", {"release": ["b.lab.test"]}) in api.calls
    assert result["advance_reservation"]["released"][0]["system"] == "b.lab.test"
    writes = len(api.writes)
    result, failed = run(advance_reservation.main, args)
    assert not result["changed"] and len(api.writes) == writes
    result, failed = run(advance_reservation.main, {"name": "perf", "release": ["a.lab.test"]})
    assert failed and "cannot be given back" in result["msg"]
