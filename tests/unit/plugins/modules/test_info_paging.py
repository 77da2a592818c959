# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The server answers lists a page at a time (100 by default); what users see is the whole list."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.lablease.lab.plugins.module_utils.client import next_link
from ansible_collections.lablease.lab.plugins.modules import advance_reservation_info, reservation_info, system_info

MANY = 250


def fill(api):
    names = ["s%03d.lab.test" % n for n in range(MANY)]
    for name in names:
        api.add_system(name)
        api.add_reservation(name)
    for n in range(MANY):
        api.add_ar("ar%03d" % n, systems=[names[n]])
    return names


def test_system_info_sees_every_page(api, run):
    names = fill(api)
    result, failed = run(system_info.main, {})
    assert not failed and [s["fqdn"] for s in result["systems"]] == names
    assert [after for path, after in api.pages if path == "/systems"] == [None, "100", "200"]


def test_reservation_and_advance_reservation_info_see_every_page(api, run):
    fill(api)
    result, failed = run(reservation_info.main, {})
    assert not failed and sorted(r["id"] for r in result["reservations"]) == list(range(1, MANY + 1))
    result, failed = run(advance_reservation_info.main, {})
    assert not failed and [a["name"] for a in result["advance_reservations"]] == ["ar%03d" % n for n in range(MANY)]


def test_next_link_reads_rfc_8288_headers():
    assert next_link('</api/v1/systems?after=x&limit=2>; rel="next"') == "/api/v1/systems?after=x&limit=2"
    assert next_link('<http://a/p?1>; rel="prev", <http://a/p?3>; title="x"; rel="next"') == "http://a/p?3"
    assert next_link('<http://a/p?1>; rel="prev"') is None
    assert next_link(None) is None
