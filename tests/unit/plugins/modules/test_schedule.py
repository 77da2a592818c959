# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.lablease.lab.plugins.modules import schedule

VLAN = {"subject": "vlans", "resource_id": "vlan-42", "slice": "ci"}


def test_book_keep_extend_cancel(api, run):
    result, failed = run(schedule.main, dict(VLAN), check=True)
    assert result["changed"] and api.writes == []
    result, failed = run(schedule.main, dict(VLAN))
    assert not failed and result["changed"] and result["booking"]["id"] == 1
    result, failed = run(schedule.main, dict(VLAN))
    assert not result["changed"]
    result, failed = run(schedule.main, dict(VLAN, end="2030-01-01T00:00:00Z"), diff=True)
    assert result["changed"] and result["diff"]["after"]["end"] == "2030-01-01T00:00:00Z"
    assert api.writes[-1] == ("PATCH", "/schedules/vlans/reservations/1", {"end": "2030-01-01T00:00:00Z"})
    result, failed = run(schedule.main, dict(VLAN, state="absent"))
    assert result["changed"] and result["cancelled"] == [1]
    result, failed = run(schedule.main, dict(VLAN, state="absent"))
    assert not result["changed"] and result["cancelled"] == []


def test_overbooked_and_unknown_subject(api, run):
    api.bookings.append({"id": 1, "subject": "vlans", "resource_id": "vlan-42", "user": "bob", "slice": None,
                         "start": "2026-11-22T10:00:00Z", "end": "2026-11-23T10:00:00Z", "quantity": 1})
    result, failed = run(schedule.main, dict(VLAN))
    assert failed and result["msg"] == "vlans/vlan-42 is reserved by bob until 2026-11-23T10:00:00Z"
    result, failed = run(schedule.main, {"subject": "nope", "resource_id": "x"})
    assert failed and "no schedule subject named nope" in result["msg"]
