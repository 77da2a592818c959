#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: advance_reservation_info
short_description: List advance reservations of lab systems
version_added: 1.0.0
description:
  - Lists advance reservations (ARs) on a lablease server - the caller's, a user's, everybody's, or one by id -
    like Grid Engine's C(qrstat).
extends_documentation_fragment:
  - lablease.lab.api
  - lablease.lab.attributes.info_module
options:
  id:
    description:
      - Only this AR (C(qrstat -ar ID)), whoever owns it. O(user) and O(state) are ignored. An unknown id gives an
        empty list.
    type: int
  name:
    description:
      - Only ARs with this name (of O(user), in O(state)). Names are not unique over time - an exited or deleted
        AR keeps its name - so this can list several; O(state=[w, r, E]) keeps the active ones.
    type: str
  user:
    description:
      - Whose ARs (C(qrstat -u)) - a user name, V(*) (or V(all)) for everybody's.
      - Default the caller's (V(me) says so too).
    type: str
  state:
    description:
      - Only ARs in these states - V(w) (granted, not started), V(r) (running), V(x) (end reached), V(d) (deleted),
        V(E) (error). Default all.
    type: list
    elements: str
    choices: [w, r, x, d, E]
seealso:
  - module: lablease.lab.advance_reservation
"""

EXAMPLES = r"""
- name: My advance reservations
  lablease.lab.advance_reservation_info:
  register: mine

- name: Show them
  ansible.builtin.debug:
    msg: "{{ item.id }} {{ item.name }} {{ item.state }} {{ item.start }} - {{ item.end }}: {{ item.systems | join(', ') }}"
  loop: "{{ mine.advance_reservations }}"

- name: Everybody's ARs that are in error
  lablease.lab.advance_reservation_info:
    user: "*"
    state: [E]
  register: broken

- name: My active AR named nightly-perf
  lablease.lab.advance_reservation_info:
    name: nightly-perf
    state: [w, r, E]
"""

RETURN = r"""
advance_reservations:
  description: The ARs found, as M(lablease.lab.advance_reservation) returns them, in the server's order.
  returned: always
  type: list
  elements: dict
  sample:
    - id: 7
      name: nightly-perf
      owner: alice
      account: perf-team
      state: w
      start: "2026-11-22T20:00:00Z"
      end: "2026-11-23T04:00:00Z"
      duration: 28800
      systems: [a.lab.test, b.lab.test]
      hosts: []
      requires: {field: arch, op: "=", value: x86_64}
      pools: [perf]
      count: 2
      acl: [alice, "@qe"]
      mail: {events: bea, to: [perf-team@example.com]}
      error_handling: hard
      submitted_at: "2026-11-22T09:12:40Z"
      error_reasons: []
"""

from ansible_collections.lablease.lab.plugins.module_utils.module import lablease_module, run_info


def find(module, client):
    """The ARs the options ask for: the one by id, or the user's, by name and state."""
    params = module.params
    if params["id"] is not None:
        return client.get_listed("/advance-reservations/%d" % params["id"])
    user = (params["user"] or "").strip()
    if user in ("", "me"):
        user = None  # the server's default: the caller's own
    elif user == "all":
        user = "*"
    ars = client.get_all("/advance-reservations", {"user": user})
    if params["name"] is not None:
        ars = [ar for ar in ars if ar.get("name") == params["name"].strip()]
    if params["state"]:
        ars = [ar for ar in ars if ar.get("state") in params["state"]]
    return ars


def main():
    module = lablease_module(dict(
        id=dict(type="int"),
        name=dict(type="str"),
        user=dict(type="str"),
        state=dict(type="list", elements="str", choices=["w", "r", "x", "d", "E"]),
    ), mutually_exclusive=[("id", "name")])
    run_info(module, "advance_reservations", find)


if __name__ == "__main__":
    main()
