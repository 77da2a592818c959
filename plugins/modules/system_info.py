#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: system_info
short_description: Find lab systems, and which are free when
version_added: 1.0.0
description:
  - Shows one system, or lists the systems the caller may see, filtered by architecture, lab, pool, owner,
    condition, who reserved them, or a window in which they must be free.
extends_documentation_fragment:
  - lablease.lab.api
  - lablease.lab.attributes.info_module
options:
  fqdn:
    description:
      - Only this system. Fails when it does not exist. The filters are ignored.
    type: str
    aliases: [name, system]
  arch:
    description:
      - Only systems of this architecture.
    type: str
  lab:
    description:
      - Only systems in this lab.
    type: str
  pool:
    description:
      - Only systems in this pool. An unknown pool is an error, never a match-all.
    type: str
  owner:
    description:
      - Only systems owned by this user.
    type: str
  condition:
    description:
      - Only systems in this condition.
    type: str
    choices: [automated, manual, broken, removed]
  reserved_by:
    description:
      - Only systems reserved now by this user; V(me) for the caller.
    type: str
  free_from:
    description:
      - Only systems with no booking from this time (RFC 3339, V(now) for now) ...
      - The forms a time may take are listed once, in L(Times and durations,https://github.com/lablease/lablease/blob/main/docs/api.md#times-and-durations).
    type: str
  free_until:
    description:
      - "... until this time (RFC 3339). With O(free_from) alone: free from then on, with no end."
      - O(free_for) is the easier way to ask for a window starting now.
    type: str
  free_for:
    description:
      - Only systems free from now for this long (V(4h), V(2d), ...). Sets O(free_from) and O(free_until).
      - The forms a duration may take are listed once, in L(Times and durations,https://github.com/lablease/lablease/blob/main/docs/api.md#times-and-durations).
    type: str
seealso:
  - module: lablease.lab.system
  - module: lablease.lab.reservation
"""

EXAMPLES = r"""
- name: One system
  lablease.lab.system_info:
    fqdn: s1.lab.test
  register: s1

- name: x86_64 systems free for the next four hours
  lablease.lab.system_info:
    arch: x86_64
    free_for: 4h
  register: free

- name: Reserve the first free one
  lablease.lab.reservation:
    system: "{{ free.systems[0].fqdn }}"
    duration: 4h
  when: free.systems | length > 0

- name: The systems I hold now
  lablease.lab.system_info:
    reserved_by: me
"""

RETURN = r"""
systems:
  description: The systems found, by name, as M(lablease.lab.system) returns them.
  returned: always
  type: list
  elements: dict
  sample:
    - fqdn: s1.lab.test
      arch: x86_64
      condition: manual
      usage: idle
      attributes: {gpu: ["yes"]}
      reservation: null
"""

from datetime import timedelta

from ansible_collections.lablease.lab.plugins.module_utils.client import LableaseError
from ansible_collections.lablease.lab.plugins.module_utils.module import lablease_module, run_info
from ansible_collections.lablease.lab.plugins.module_utils.times import (
    format_time,
    parse_duration,
    parse_time,
    utcnow,
)

FILTERS = ("arch", "lab", "pool", "owner", "condition", "reserved_by")


def window(params):
    """(free_from, free_until) as RFC 3339 text, from the options."""
    try:
        if params["free_for"]:
            start = utcnow().replace(microsecond=0)
            return format_time(start), format_time(start + timedelta(seconds=parse_duration(params["free_for"], "free_for")))
        start = params["free_from"]
        if start and start.strip().lower() == "now":
            start = utcnow().replace(microsecond=0)
        start = format_time(parse_time(start, "free_from")) if start else None
        until = format_time(parse_time(params["free_until"], "free_until")) if params["free_until"] else None
        return start, until
    except ValueError as error:
        raise LableaseError(str(error))


def find(module, client):
    """The systems the options ask for: the one named (failing when there is none), or those the filters let through."""
    params = module.params
    if params["fqdn"]:
        fqdn = params["fqdn"].strip().lower()
        found = client.get_or_none("/systems/%s" % client.quote(fqdn))
        if found is None:
            module.fail_json(msg="no system named %s on the lablease server at %s (or you may not see it)"
                             % (fqdn, client.url))
        return [found]
    query = dict((key, params[key]) for key in FILTERS)
    query["free_from"], query["free_until"] = window(params)
    return client.get_all("/systems", query)


def main():
    module = lablease_module(dict(
        fqdn=dict(type="str", aliases=["name", "system"]),
        arch=dict(type="str"),
        lab=dict(type="str"),
        pool=dict(type="str"),
        owner=dict(type="str"),
        condition=dict(type="str", choices=["automated", "manual", "broken", "removed"]),
        reserved_by=dict(type="str"),
        free_from=dict(type="str"),
        free_until=dict(type="str"),
        free_for=dict(type="str"),
    ), mutually_exclusive=[("free_for", "free_from"), ("free_for", "free_until")])
    run_info(module, "systems", find)


if __name__ == "__main__":
    main()
