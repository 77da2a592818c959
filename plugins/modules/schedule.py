#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: schedule
short_description: Book a generic resource (IP address, VLAN, licence seat) on a schedule
version_added: 1.0.0
description:
  - Books a resource of a generic schedule subject on a lablease server for the caller, or cancels the booking.
  - Schedule subjects (for example V(vlans)) and their resources' capacities are set up by an administrator;
    a resource books exclusively unless its capacity is above 1. Overbooking is refused with the booking in the way named.
  - Idempotent. With O(state=present), a current or future booking of the caller for the same resource (and O(slice),
    when given) is kept; a later O(end) or a longer O(duration) moves its end, and a different O(resource_spec) is updated.
    With O(state=absent), the caller's current and future bookings of the resource are cancelled.
extends_documentation_fragment:
  - lablease.lab.api
  - lablease.lab.attributes.resource
attributes:
  check_mode:
    details: Nothing is written; the server is asked (V(validate_only)), so the task fails where the real run would
      (an overbooked or held resource), and otherwise says what would be booked, changed or cancelled.
options:
  subject:
    description:
      - The schedule subject, for example V(vlans) or V(ip-addresses).
    type: str
    required: true
  resource_id:
    description:
      - The resource of the subject, for example V(vlan-42) or V(10.0.0.7).
    type: str
    required: true
    aliases: [resource]
  state:
    description:
      - V(present) books the resource; V(absent) cancels the caller's bookings of it.
    type: str
    choices: [present, absent]
    default: present
  start:
    description:
      - When the booking begins (RFC 3339 with a zone). Default now.
    type: str
  end:
    description:
      - When the booking ends (RFC 3339 with a zone). Mutually exclusive with O(duration).
    type: str
  duration:
    description:
      - How long, counted from the start (V(4h), V(2d), V(PT30M), ...). Without O(end) or O(duration),
        the subject's default duration applies.
      - The forms a duration may take are listed once, in L(Times and durations,https://github.com/lablease/lablease/blob/main/docs/api.md#times-and-durations).
    type: str
  quantity:
    description:
      - How many units of the resource to book (for resources with a capacity above 1).
    type: int
    default: 1
  slice:
    description:
      - A label grouping bookings, for example the experiment or pipeline they belong to.
    type: str
  resource_spec:
    description:
      - Free-form description of what is booked, kept with the booking.
    type: dict
seealso:
  - module: lablease.lab.reservation
"""

EXAMPLES = r"""
- name: Book VLAN 42 for the next two days
  lablease.lab.schedule:
    subject: vlans
    resource_id: vlan-42
    duration: 2d
    slice: nightly-ci
    resource_spec:
      purpose: storage tests
  register: vlan

- name: Show its end
  ansible.builtin.debug:
    msg: "vlan-42 is mine until {{ vlan.booking.end }}"

- name: Give it back
  lablease.lab.schedule:
    subject: vlans
    resource_id: vlan-42
    slice: nightly-ci
    state: absent
"""

RETURN = r"""
booking:
  description: The booking held (O(state=present)) or the last one cancelled (O(state=absent)); null when none.
  returned: always
  type: dict
  contains:
    id:
      description: The booking's id (absent in check mode for a new booking).
      type: int
      sample: 7
    subject:
      description: The schedule subject.
      type: str
      sample: vlans
    resource_id:
      description: The resource.
      type: str
      sample: vlan-42
    user:
      description: Who holds it.
      type: str
      sample: alice
    slice:
      description: Its slice, or null.
      type: str
    start:
      description: Start (RFC 3339, UTC).
      type: str
      sample: "2026-11-22T10:00:00Z"
    end:
      description: End (RFC 3339, UTC).
      type: str
      sample: "2026-11-24T10:00:00Z"
    quantity:
      description: Units booked.
      type: int
      sample: 1
    resource_spec:
      description: The free-form description.
      type: dict
cancelled:
  description: Ids of the bookings cancelled (O(state=absent)), or that would be in check mode.
  returned: always
  type: list
  elements: int
  sample: [7]
"""

from datetime import timedelta

from ansible_collections.lablease.lab.plugins.module_utils.module import options
from ansible_collections.lablease.lab.plugins.module_utils.times import (
    format_time,
    parse_duration,
    parse_time,
    utcnow,
)
from ansible_collections.lablease.lab.plugins.module_utils.resource import Resource


def shown(booking):
    if not booking:
        return {}
    keys = ("id", "subject", "resource_id", "user", "slice", "start", "end", "quantity", "resource_spec")
    return dict((k, booking.get(k)) for k in keys if k in booking)


class Booking(Resource):
    key = "booking"

    def validate(self):
        params = self.params
        self.extra = {"cancelled": []}
        try:
            self.start = parse_time(params["start"], "start") if params["start"] else None
            self.end = parse_time(params["end"], "end") if params["end"] else None
            self.seconds = parse_duration(params["duration"], "duration") if params["duration"] else None
        except ValueError as error:
            self.module.fail_json(msg=str(error))

    def read(self):
        """The caller's first current or future booking of the resource (all of them in self.mine), or None."""
        params = self.params
        self.base = "/schedules/%s/reservations" % self.client.quote(params["subject"])
        self.me = self.client.me()["name"]
        query = {"resource_id": params["resource_id"], "user": self.me, "slice": params["slice"],
                 "start": format_time(self.start or utcnow())}
        self.mine = self.client.get(self.base, query)
        if self.start is not None:
            self.mine = [b for b in self.mine if parse_time(b["start"]) == self.start]
        return self.mine[0] if self.mine else None

    def absent(self, current):
        """Cancel every booking of the caller found; the last one is the answer."""
        batch = self.client.batch()  # every booking or none (check mode: only validated)
        for booking in self.mine:
            batch.add("DELETE", "%s/%d" % (self.base, booking["id"]))
        batch.send()
        self.extra["cancelled"] = [b["id"] for b in self.mine]
        last = self.mine[-1] if self.mine else None
        self.done(bool(self.mine), last, last, None)

    def plan(self, current):
        if current is None:
            return self.new_booking()
        changes = {}
        wanted = self.end
        if self.seconds is not None:
            wanted = parse_time(current["start"]) + timedelta(seconds=self.seconds)
        if wanted is not None and current.get("end") and wanted > parse_time(current["end"]):
            changes["end"] = format_time(wanted)
        spec = self.params["resource_spec"]
        if spec is not None and spec != (current.get("resource_spec") or {}):
            changes["resource_spec"] = spec
        return changes

    def new_booking(self):
        params = self.params
        body = {"resource_id": params["resource_id"], "quantity": params["quantity"]}
        for key in ("slice", "resource_spec", "duration"):
            if params[key] is not None:
                body[key] = params[key]
        if self.start is not None:
            body["start"] = format_time(self.start)
        if self.end is not None:
            body["end"] = format_time(self.end)
        return body

    def predict(self, current, plan):
        if current is not None:
            return dict(current, **plan)
        begin = self.start or utcnow().replace(microsecond=0)
        end = self.end or (begin + timedelta(seconds=self.seconds) if self.seconds else None)
        predicted = dict(plan, subject=self.params["subject"], user=self.me, start=format_time(begin), end=format_time(end))
        predicted.pop("duration", None)
        return predicted

    def create(self, plan):
        return self.client.request("POST", self.base, plan)[1]

    def update(self, current, plan):
        return self.client.request("PATCH", "%s/%d" % (self.base, current["id"]), plan)[1]

    shown = staticmethod(shown)


def main():
    Booking.main(options(
        "state",
        subject=dict(type="str", required=True),
        resource_id=dict(type="str", required=True, aliases=["resource"]),
        start=dict(type="str"),
        end=dict(type="str"),
        duration=dict(type="str"),
        quantity=dict(type="int", default=1),
        slice=dict(type="str"),
        resource_spec=dict(type="dict"),
    ), mutually_exclusive=[("duration", "end")])


if __name__ == "__main__":
    main()
