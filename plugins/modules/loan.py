#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: loan
short_description: Lend a lab system to a user, extend the loan, or return it
version_added: 1.0.0
description:
  - Makes sure a system is lent to a user (O(state=present)) or not lent (O(state=absent)).
  - While a system is lent, only the recipient, the system's owner and administrators may reserve it.
  - Lending to somebody else needs the C(loan_any) permission on the system (owners and administrators have it);
    lending to oneself needs C(loan_self).
extends_documentation_fragment:
  - lablease.lab.api
  - lablease.lab.attributes.resource
  - lablease.lab.options.system
attributes:
  diff_mode:
    details: Shows the loan's recipient, end and comment before and after.
options:
  state:
    description:
      - V(present) lends the system to O(recipient) unless it already is (then the loan is kept, and extended
        when a later O(end) or O(duration) is asked); a loan to somebody else fails the task, naming the
        recipient and the loan's end.
      - V(absent) returns the current loan (the recipient) or takes it back (C(loan_any)); not changed when the
        system is not lent. With O(recipient), only a loan to that user is returned.
    type: str
    choices: [present, absent]
    default: present
  recipient:
    description:
      - User name the system is lent to. Defaults to the caller (the owner of the token).
    type: str
  duration:
    description:
      - Limit a new loan to this long (V(2d), V(1w), V(PT48H) ...). Without O(duration), O(limited) or O(end) a
        loan has no end.
      - For an existing loan, a duration that - counted from the loan's start - ends later extends it.
      - The forms a duration may take are listed once, in L(Times and durations,https://github.com/lablease/lablease/blob/main/docs/api.md#times-and-durations).
    type: str
  limited:
    description:
      - Limit a new loan to the site's default loan duration.
    type: bool
    default: false
  end:
    description:
      - The loan's end, an RFC 3339 time such as V(2026-12-01T18:00:00Z). A new loan ends then; an existing loan
        that ends earlier is extended to it (the module never shortens a loan).
    type: str
  extend_by:
    description:
      - Add this much to the current loan's end (V(1d)). This is not idempotent - every run extends - so the task
        reports C(changed) each time; prefer O(end) or O(duration) for a fixed end.
      - The forms a duration may take are listed once, in L(Times and durations,https://github.com/lablease/lablease/blob/main/docs/api.md#times-and-durations).
    type: str
  comment:
    description:
      - Why the system is lent; stored with a new loan.
    type: str
  purpose:
    description:
      - What the system is lent for, shown with the recipient as its holder (the API, the CLI, the inventory, the
        system's page); stored with a new loan.
      - Required by a site that sets C(require_purpose) - a new loan without one then fails the task.
    type: str
  force:
    description:
      - A new loan is refused while another user holds a reservation on the system (now or later), since the
        recipient could not use it; the task then fails naming the holder and the reservation's end.
      - With O(force=true) the system is lent anyway and those reservations are returned first (a recipe running
        on the system is aborted); their holders are told through their notices.
      - Check mode looks for such reservations too and fails the same way without O(force).
      - Lending an idle Automated system of a pool that would then keep fewer than its C(automation_floor) is
        refused as well; O(force=true) lends it anyway when the caller is an administrator.
    type: bool
    default: false
seealso:
  - module: lablease.lab.reservation
  - module: lablease.lab.access_policy
"""

EXAMPLES = r"""
- name: Lend s2.lab.test to bob for a week
  lablease.lab.loan:
    system: s2.lab.test
    recipient: bob
    duration: 1w
    comment: driver bring-up

- name: Make sure it is lent to bob until the end of the year (extends, never shortens)
  lablease.lab.loan:
    system: s2.lab.test
    recipient: bob
    end: "2030-12-31T18:00:00Z"

- name: Lend s3.lab.test to carol now, returning anybody else's reservation of it (they are told)
  lablease.lab.loan:
    system: s3.lab.test
    recipient: carol
    force: true

- name: Take it back
  lablease.lab.loan:
    system: s2.lab.test
    state: absent
"""

RETURN = r"""
loan:
  description:
    - The current loan after the task (in check mode, as it would be); null when the system is not lent.
  returned: always
  type: dict
  contains:
    id:
      description: The loan's id (null in check mode for a new loan).
      type: int
    system:
      description: The system.
      type: str
      sample: s2.lab.test
    recipient:
      description: Who it is lent to.
      type: str
      sample: bob
    lender:
      description: Who lent it.
      type: str
    start:
      description: When the loan started.
      type: str
    end:
      description: When it ends; null for no limit (or, in check mode, when the site's default applies).
      type: str
    comment:
      description: The comment.
      type: str
    purpose:
      description: What it is lent for, or null.
      type: str
    returned_at:
      description: When it was returned, or null.
      type: str
    return_reason:
      description: Why it was returned, or null.
      type: str
returned:
  description: The loan that was returned by O(state=absent); null otherwise.
  returned: always
  type: dict
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


def wanted_end(params, loan, now):
    """The end the options ask for (a datetime), or None: from end, or duration counted from the start."""
    if params["end"]:
        return parse_time(params["end"], "end")
    if params["duration"]:
        start = parse_time(loan["start"]) if loan and loan.get("start") else now
        return start + timedelta(seconds=parse_duration(params["duration"]))
    return None


class Loan(Resource):
    key = "loan"
    shown_keys = ("system", "recipient", "end", "comment", "purpose")

    def validate(self):
        self.extra = {"returned": None}
        try:
            wanted_end(self.params, None, utcnow())
            if self.params["extend_by"]:
                parse_duration(self.params["extend_by"], "extend_by")
        except ValueError as error:
            self.module.fail_json(msg=str(error))

    def read(self):
        self.fqdn = self.params["system"].strip().lower()
        self.path = "/systems/%s/loan" % self.client.quote(self.fqdn)
        current = self.client.get_or_none(self.path)
        if current is None:
            self.client.get("/systems/%s" % self.client.quote(self.fqdn))  # an unknown system fails with its own message
        return current

    def absent(self, current):
        """Return the loan; not changed when there is none, or it is somebody else's than the recipient given."""
        if current is None or (self.params["recipient"] and current["recipient"] != self.params["recipient"]):
            self.done(False, current, current, current)
        self.client.request("DELETE", self.path)  # check mode: only validated
        self.extra["returned"] = current
        self.done(True, None, current, None)

    def plan(self, current):
        params = self.params
        self.recipient = params["recipient"] or self.client.me()["name"]
        self.now = utcnow()
        if current is not None:
            return self.extension(current)
        if params["extend_by"]:
            self.module.fail_json(msg="%s is not lent: extend_by needs a loan to extend (use duration or end for a new one)"
                                  % self.fqdn)
        body = {"recipient": self.recipient}
        self.target = wanted_end(params, None, self.now)
        if params["end"]:
            seconds = int((self.target - self.now).total_seconds())
            if seconds <= 0:
                self.module.fail_json(msg="end: %s is in the past" % params["end"])
            body["duration"] = str(seconds)
        elif params["duration"]:
            body["duration"] = params["duration"]
        elif params["limited"]:
            body["limited"] = True
        if params["comment"] is not None:
            body["comment"] = params["comment"]
        if params["purpose"] is not None:
            body["purpose"] = params["purpose"]
        if params["force"]:
            body["force"] = True
        return body

    def extension(self, current):
        """The PATCH that extends the loan as asked, or None; a loan to somebody else fails the task."""
        if current["recipient"] != self.recipient:
            self.module.fail_json(msg="%s is lent to %s until %s" % (
                self.fqdn, current["recipient"], current.get("end") or "further notice"), loan=current)
        if self.params["extend_by"]:
            extend_by = parse_duration(self.params["extend_by"], "extend_by")
            self.predicted_end = None
            if current.get("end"):
                self.predicted_end = format_time(parse_time(current["end"]) + timedelta(seconds=extend_by))
            return {"extend_by": self.params["extend_by"]}
        target = wanted_end(self.params, current, self.now)
        if target is not None and current.get("end") and target > parse_time(current["end"]):
            self.predicted_end = format_time(target)
            return {"end": self.predicted_end}
        return None

    def predict(self, current, plan):
        if current is not None:
            return dict(current, end=self.predicted_end)
        return {"id": None, "system": self.fqdn, "recipient": self.recipient, "lender": self.client.me()["name"],
                "start": format_time(self.now), "end": format_time(self.target), "comment": self.params["comment"],
                "purpose": self.params["purpose"], "returned_at": None, "return_reason": None}

    def create(self, plan):
        batch = self.client.batch().add("POST", self.path, plan)
        if self.params["end"]:
            # the duration is counted from the server's clock: set the end asked for exactly, in the same transaction
            batch.add("PATCH", self.path, {"end": format_time(self.target)})
        return batch.send()[-1]


def main():
    Loan.main(options(
        "system", "state", "force",
        recipient=dict(type="str"),
        duration=dict(type="str"),
        limited=dict(type="bool", default=False),
        end=dict(type="str"),
        extend_by=dict(type="str"),
        comment=dict(type="str"),
        purpose=dict(type="str"),
    ), mutually_exclusive=[("duration", "end", "limited"), ("extend_by", "end"), ("extend_by", "duration")])


if __name__ == "__main__":
    main()
