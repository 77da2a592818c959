#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: reservation_info
short_description: List reservations of lab systems
version_added: 1.0.0
description:
  - Lists reservations on a lablease server - the caller's, a system's, or one by id - newest first.
extends_documentation_fragment:
  - lablease.lab.api
  - lablease.lab.attributes.info_module
options:
  id:
    description:
      - Only this reservation. The other filters are ignored.
    type: int
  system:
    description:
      - Only reservations of this system.
    type: str
    aliases: [fqdn]
  user:
    description:
      - Only this user's reservations; V(me) for the caller.
      - Default V(me) unless O(system) is given; use V(all) for everybody's (administrators see all,
        others see what the systems' policies let them see).
    type: str
  active:
    description:
      - V(true) lists reservations not yet returned (active and upcoming), V(false) only returned or expired ones.
    type: bool
    default: true
seealso:
  - module: lablease.lab.reservation
"""

EXAMPLES = r"""
- name: My reservations that are not returned yet
  lablease.lab.reservation_info:
  register: mine

- name: Who holds s1.lab.test
  lablease.lab.reservation_info:
    system: s1.lab.test
  register: on_s1

- name: Show them
  ansible.builtin.debug:
    msg: "{{ item.system }}: {{ item.user }} until {{ item.end }}"
  loop: "{{ on_s1.reservations }}"

- name: Past reservations of s1.lab.test, by anybody
  lablease.lab.reservation_info:
    system: s1.lab.test
    user: all
    active: false
"""

RETURN = r"""
reservations:
  description: The reservations found, newest first, as M(lablease.lab.reservation) returns them.
  returned: always
  type: list
  elements: dict
  sample:
    - id: 42
      system: s1.lab.test
      user: alice
      kind: manual
      start: "2026-11-22T10:00:00Z"
      end: "2026-11-22T14:00:00Z"
      state: active
      seconds_left: 14395
"""

from ansible_collections.lablease.lab.plugins.module_utils.module import lablease_module, run_info


def find(module, client):
    """The reservations the options ask for: the one by id, or by system, user and whether returned."""
    params = module.params
    if params["id"] is not None:
        return client.get_listed("/reservations/%d" % params["id"])
    user = params["user"]
    if user is None:
        user = None if params["system"] else "me"
    elif user == "all":
        user = None
    return client.get_all("/reservations", {"system": params["system"], "user": user, "active": params["active"]})


def main():
    module = lablease_module(dict(
        id=dict(type="int"),
        system=dict(type="str", aliases=["fqdn"]),
        user=dict(type="str"),
        active=dict(type="bool", default=True),
    ))
    run_info(module, "reservations", find)


if __name__ == "__main__":
    main()
