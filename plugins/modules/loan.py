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
version_added: 0.1.0
description:
  - Makes sure a system is lent to a user (O(state=present)) or not lent (O(state=absent)).
  - While a system is lent, only the recipient, the system's owner and administrators may reserve it.
  - Lending to somebody else needs the C(loan_any) permission on the system (owners and administrators have it);
    lending to oneself needs C(loan_self).
author:
  - lablease developers (@lablease)
extends_documentation_fragment:
  - lablease.lab.api
attributes:
  check_mode:
    support: full
    description: Nothing is written; the answer shows the loan as it would be.
  diff_mode:
    support: full
    description: Shows the loan's recipient, end and comment before and after.
  action_group:
    description: Use C(group/lablease.lab.api) in C(module_defaults) to set the connection options.
    support: full
    membership:
      - lablease.lab.api
options:
  system:
    description:
      - Fully qualified name of the system.
    type: str
    required: true
    aliases: [fqdn]
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
    type: str
  comment:
    description:
      - Why the system is lent; stored with a new loan.
    type: str
  force:
    description:
      - A new loan is refused while another user holds a reservation on the system (now or later), since the
        recipient could not use it; the task then fails naming the holder and the reservation's end.
      - With O(force=true) the system is lent anyway and those reservations are returned first (a recipe running
        on the system is aborted); their holders are told through their notices.
      - Check mode looks for such reservations too and fails the same way without O(force).
    type: bool
    default: false
requirements:
  - Python 3.8 or later on the host that runs the module.
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
returned:
  description: The loan that was returned by O(state=absent); null otherwise.
  returned: always
  type: dict
"""

from datetime import timedelta

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.lablease.lab.plugins.module_utils.client import (
    LableaseError,
    api_argument_spec,
    format_time,
    module_client,
    parse_duration,
    parse_time,
    short_time,
    utcnow,
)


def shown(loan):
    if not loan:
        return {}
    return dict((k, loan.get(k)) for k in ("system", "recipient", "end", "comment"))


def wanted_end(params, loan, now):
    """The end the options ask for (a datetime), or None: from end, or duration counted from the start."""
    if params["end"]:
        return parse_time(params["end"], "end")
    if params["duration"]:
        start = parse_time(loan["start"]) if loan and loan.get("start") else now
        return start + timedelta(seconds=parse_duration(params["duration"]))
    return None


def refuse_over_reservations(module, client, fqdn, recipient):
    """Check mode: fail as the server would when other users' reservations are in the loan's way."""
    others = [r for r in client.get("/reservations", {"system": fqdn, "active": True}) if r["user"] != recipient]
    if others:
        first = min(others, key=lambda r: (r["start"], r["id"]))
        module.fail_json(msg="%s is reserved by %s until %s (reservation %s), so %s could not use the loan; "
                             "use force to return %s" % (fqdn, first["user"], short_time(first.get("end")) or
                                                         "further notice", first["id"], recipient,
                                                         "them" if len(others) > 1 else "it"))


def main():
    module = AnsibleModule(
        argument_spec=api_argument_spec(
            system=dict(type="str", required=True, aliases=["fqdn"]),
            state=dict(type="str", default="present", choices=["present", "absent"]),
            recipient=dict(type="str"),
            duration=dict(type="str"),
            limited=dict(type="bool", default=False),
            end=dict(type="str"),
            extend_by=dict(type="str"),
            comment=dict(type="str"),
            force=dict(type="bool", default=False),
        ),
        mutually_exclusive=[("duration", "end", "limited"), ("extend_by", "end"), ("extend_by", "duration")],
        supports_check_mode=True,
    )
    params = module.params
    try:
        wanted_end(params, None, utcnow())
        if params["extend_by"]:
            parse_duration(params["extend_by"], "extend_by")
    except ValueError as error:
        module.fail_json(msg=str(error))
    client = module_client(module)
    fqdn = params["system"].strip().lower()
    path = "/systems/%s/loan" % client.quote(fqdn)
    try:
        current = client.get_or_none(path)
        if current is None:
            client.get("/systems/%s" % client.quote(fqdn))  # an unknown system fails with its own message
        if params["state"] == "absent":
            if current is None or (params["recipient"] and current["recipient"] != params["recipient"]):
                module.exit_json(changed=False, loan=current, returned=None, diff={"before": shown(current), "after": shown(current)})
            if not module.check_mode:
                client.request("DELETE", path)
            module.exit_json(changed=True, loan=None, returned=current, diff={"before": shown(current), "after": {}})

        recipient = params["recipient"] or client.me()["name"]
        now = utcnow()
        if current is not None:
            if current["recipient"] != recipient:
                module.fail_json(msg="%s is lent to %s until %s" % (
                    fqdn, current["recipient"], short_time(current.get("end")) or "further notice"), loan=current)
            change = None
            if params["extend_by"]:
                change = {"extend_by": params["extend_by"]}
                predicted_end = None
                if current.get("end"):
                    predicted_end = format_time(parse_time(current["end"]) + timedelta(
                        seconds=parse_duration(params["extend_by"], "extend_by")))
            else:
                target = wanted_end(params, current, now)
                if target is not None and current.get("end") and target > parse_time(current["end"]):
                    change = {"end": format_time(target)}
                    predicted_end = change["end"]
            if change is None:
                module.exit_json(changed=False, loan=current, returned=None, diff={"before": shown(current), "after": shown(current)})
            after = dict(current, end=predicted_end)
            if not module.check_mode:
                after = client.request("PATCH", path, change)[1]
            module.exit_json(changed=True, loan=after, returned=None, diff={"before": shown(current), "after": shown(after)})

        if params["extend_by"]:
            module.fail_json(msg="%s is not lent: extend_by needs a loan to extend (use duration or end for a new one)" % fqdn)
        body = {"recipient": recipient}
        target = wanted_end(params, None, now)
        if params["end"]:
            seconds = int((target - now).total_seconds())
            if seconds <= 0:
                module.fail_json(msg="end: %s is in the past" % params["end"])
            body["duration"] = str(seconds)
        elif params["duration"]:
            body["duration"] = params["duration"]
        elif params["limited"]:
            body["limited"] = True
        if params["comment"] is not None:
            body["comment"] = params["comment"]
        if params["force"]:
            body["force"] = True
        elif module.check_mode:
            refuse_over_reservations(module, client, fqdn, recipient)
        predicted = {"id": None, "system": fqdn, "recipient": recipient, "lender": client.me()["name"],
                     "start": format_time(now), "end": format_time(target), "comment": params["comment"],
                     "returned_at": None, "return_reason": None}
        after = predicted
        if not module.check_mode:
            after = client.request("POST", path, body)[1]
            if params["end"] and after.get("end") != format_time(target):
                # the duration was counted from the server's clock: set the end asked for exactly
                after = client.request("PATCH", path, {"end": format_time(target)})[1]
        module.exit_json(changed=True, loan=after, returned=None, diff={"before": {}, "after": shown(after)})
    except LableaseError as error:
        module.fail_json(msg=error.message, status=error.status, problem=error.problem)


if __name__ == "__main__":
    main()
