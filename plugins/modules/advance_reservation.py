#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: advance_reservation
short_description: Book lab systems for a future window with a Grid Engine style advance reservation
version_added: 1.0.0
description:
  - Makes sure the caller has an advance reservation (AR) named O(name) (O(state=present)) or has none
    (O(state=absent)). An AR books a set of systems for a window - O(start) to O(end), or O(duration) long -
    so that the work of the users in its O(acl) is guaranteed to run then. It is Grid Engine's C(qrsub),
    C(qralter) and C(qrdel).
  - B(Idempotency.) O(name) is the key - an B(active) AR of the caller (state C(w) granted and waiting,
    C(r) running, or C(E) in error) with this name is the same AR. An AR that has exited (C(x)) or was
    deleted (C(d)) is not, so the task then asks for a new one.
  - V(present) and no such AR - the server is asked for one (C(POST)); it chooses the best-suited eligible
    systems all-or-nothing, or refuses, saying why (how many systems each requirement ruled out, which are
    booked when).
  - V(present) and the AR exists - only what C(qralter) can change is compared - the end (O(end), or O(duration)
    counted from the AR's start), O(acl), O(mail_events) and O(mail_to), and O(release) gives systems back - and
    only what differs is sent
    (C(PATCH)); the server checks the new window against the calendar again. An end may move earlier or
    later. Nothing differs - not changed. O(hosts), O(requires), O(pools), O(count), O(start), O(account) and
    O(error_handling) cannot change on a granted AR - when given and different, the task fails and says
    so; delete the AR (O(state=absent)) and create it again.
  - Only administrators and members of the server's C(arusers) group may create advance reservations, and the
    server limits how many may be active at once (C(max_advance_reservations); 0 turns them off).
extends_documentation_fragment:
  - lablease.lab.api
  - lablease.lab.attributes.resource
attributes:
  check_mode:
    details:
      - Nothing is written. Every request is checked by the server without being kept (V(validate_only), as Grid
        Engine's C(qrsub -w v)) - the task reports C(changed) and the AR as it would be (its C(id) null, the
        systems that would be granted), or fails with the server's reasons as the real run would.
  diff_mode:
    details: Shows the AR (name, account, state, start, end, duration, systems, hosts, requires, pools, count,
      acl, mail, error_handling) before and after; a release shows in its systems.
options:
  name:
    description:
      - The AR's name (C(qrsub -N)). The caller's active AR with this name is the one the task manages.
    type: str
    required: true
  state:
    description:
      - V(present) asks for the AR unless the caller has an active one with this O(name), which is then changed
        where it differs (see the description).
      - V(absent) deletes the caller's active ARs with this O(name) (C(qrdel)); not changed when there is none.
        The server refuses while work is bound to the AR (jobs, reservations) unless O(force=true).
    type: str
    choices: [present, absent]
    default: present
  start:
    description:
      - When the AR begins, as an RFC 3339 time with a zone (V(2026-11-22T20:00:00Z)); C(qrsub -a).
        Default - when it is granted.
      - Cannot change once granted.
    type: str
  end:
    description:
      - When the AR ends, as an RFC 3339 time with a zone; C(qrsub -e).
      - Creating an AR needs O(end) or O(duration). With O(start), O(end) and O(duration) all three, they
        must agree.
    type: str
  duration:
    description:
      - How long the AR lasts, counted from its start; C(qrsub -d). V(4h), V(30m), V(2d), V(1w), V(1h30m), ISO 8601
        V(PT4H) or V(1:30:00). Sent in seconds.
      - For an existing AR, the end it gives (the AR's start plus O(duration)) is compared with the AR's end.
      - The forms a duration may take are listed once, in L(Times and durations,https://github.com/lablease/lablease/blob/main/docs/api.md#times-and-durations).
    type: str
  hosts:
    description:
      - The systems to reserve, by name (fully qualified). Mutually exclusive with O(requires).
      - Compared as a set; cannot change once granted.
    type: list
    elements: str
  requires:
    description:
      - Host requirements (C(qrsub -l)) - the job JSON's C(host_requires) filter tree - a leaf with C(field) (V(arch)),
        C(op) (V(=)) and C(value) (V(x86_64)), or C(and) / C(or) with a list of trees (see EXAMPLES).
      - Cannot change once granted (compared with the server's tree; numbers and the same number as text are
        equal).
    type: dict
  pools:
    description:
      - Take the systems from these pools (C(qrsub -q)). Compared as a set; cannot change once granted.
    type: list
    elements: str
  count:
    description:
      - How many systems (C(qrsub -pe) slots). The server's default is 1. Cannot change once granted.
    type: int
  acl:
    description:
      - Who may use the AR (C(qrsub -u)) - user names, and group names prefixed with V(@) (V(@qe)). The server's
        default is the caller alone.
      - The whole set, in any order. An O(acl) that differs from the AR's only by the AR's owner is the same.
    type: list
    elements: str
  mail_events:
    description:
      - When to mail (C(qrsub -m)) - any of V(b) (the AR begins), V(e) (it ends) and V(a) (it goes into error and
        is satisfied again), for example V(bea), or V(n) for no mail. V(n) and an empty string are the same;
        the order of the letters does not matter.
    type: str
  mail_to:
    description:
      - Addresses mailed besides the owner (C(qrsub -M)). The whole set, in any order.
    type: list
    elements: str
  error_handling:
    description:
      - What happens when a reserved system breaks, is removed or loses its lab, which puts the AR in error
        (C(E)) - V(hard) (C(qrsub -he yes)) dispatches no work into the AR then, V(soft) keeps the remaining
        systems usable. The server's default is V(soft). Cannot change once granted.
    type: str
    choices: [hard, soft]
  account:
    description:
      - An accounting string recorded with the AR (C(qrsub -A)). Cannot change once granted.
    type: str
  force:
    description:
      - With O(state=absent), delete the AR even while work is bound to it - the server aborts that work first.
    type: bool
    default: false
  release:
    description:
      - Give these systems (fqdns) of an existing AR back now, before its end - they are free at once, and the
        AR's accounting counts them until then. Systems already given back are not changed (idempotent).
      - Refused for a system the AR's own work uses, and for every system it holds (delete it instead).
      - Ignored when the AR is created.
    type: list
    elements: str
notes:
  - The AR's systems can be used inside its window by the users in its O(acl) - jobs bound to it (the job
    JSON's C(recipe_sets[].ar), M(lablease.lab.job)) and reservations made with C(advance_reservation).
seealso:
  - module: lablease.lab.advance_reservation_info
  - module: lablease.lab.job
  - module: lablease.lab.reservation
"""

EXAMPLES = r"""
- name: Two x86_64 systems from the perf pool for tonight's run
  lablease.lab.advance_reservation:
    name: nightly-perf
    start: "2030-01-15T20:00:00Z"
    duration: 8h
    requires:
      and:
        - {field: arch, op: "=", value: x86_64}
        - {field: memory, op: ">=", value: 8192}
    pools: [perf]
    count: 2
    acl: [alice, "@qe"]
    mail_events: bea
    mail_to: [perf-team@example.com]
    error_handling: hard
    account: perf-team
  register: ar

- name: Show the systems granted
  ansible.builtin.debug:
    msg: "AR {{ ar.advance_reservation.id }}: {{ ar.advance_reservation.systems | join(', ') }}"

- name: Keep them two hours longer and let bob use them too (the rest is left alone)
  lablease.lab.advance_reservation:
    name: nightly-perf
    duration: 10h
    acl: [alice, bob, "@qe"]

- name: Give the last system back early - it is free at once, the other stays reserved until the end
  lablease.lab.advance_reservation:
    name: nightly-perf
    release: ["{{ ar.advance_reservation.systems | last }}"]

- name: Delete it, aborting work still bound to it
  lablease.lab.advance_reservation:
    name: nightly-perf
    state: absent
    force: true
"""

RETURN = r"""
advance_reservation:
  description:
    - The AR after the task. In check mode, a new AR as it would be granted (C(id) null, C(systems) the ones the
      server would choose), or the AR with the changes it would get. Null after O(state=absent).
  returned: always
  type: dict
  contains:
    id:
      description: The AR's id.
      type: int
      sample: 7
    name:
      description: Its name.
      type: str
      sample: nightly-perf
    owner:
      description: Who asked for it.
      type: str
      sample: alice
    account:
      description: Its accounting string, or null.
      type: str
      sample: perf-team
    state:
      description: V(w) (granted, not started), V(r) (running), V(x) (end reached), V(d) (deleted) or V(E) (error).
      type: str
      sample: w
    start:
      description: When it begins.
      type: str
      sample: "2026-11-22T20:00:00Z"
    end:
      description: When it ends.
      type: str
      sample: "2026-11-23T04:00:00Z"
    duration:
      description: Its length in seconds.
      type: int
      sample: 28800
    systems:
      description: The systems granted.
      type: list
      elements: str
      sample: [a.lab.test, b.lab.test]
    hosts:
      description: The systems asked for by name (empty when it was asked for by requirements).
      type: list
      elements: str
    requires:
      description: The host requirements asked for, or null.
      type: dict
    pools:
      description: The pools asked for.
      type: list
      elements: str
    count:
      description: How many systems were asked for.
      type: int
      sample: 2
    acl:
      description: Who may use it (users, and groups as V(@group)).
      type: list
      elements: str
      sample: [alice, "@qe"]
    mail:
      description: C(events) (letters of V(bea), or V(n)) and C(to) (addresses).
      type: dict
      sample: {events: bea, to: [perf-team@example.com]}
    error_handling:
      description: V(hard) or V(soft).
      type: str
      sample: hard
    submitted_at:
      description: When it was asked for.
      type: str
    error_reasons:
      description: Why it is in error (C(E)).
      type: list
      elements: str
    released:
      description: Systems given back before the end - C(system) and C(at) (null in check mode).
      type: list
      elements: dict
deleted:
  description: Ids of the ARs deleted (O(state=absent)), or that would be deleted in check mode.
  returned: when O(state=absent)
  type: list
  elements: int
  sample: [7]
"""

import json
from datetime import timedelta

from ansible_collections.lablease.lab.plugins.module_utils.client import LableaseError
from ansible_collections.lablease.lab.plugins.module_utils.module import lablease_module, options, run
from ansible_collections.lablease.lab.plugins.module_utils.resource import fields
from ansible_collections.lablease.lab.plugins.module_utils.times import (
    format_time,
    parse_duration,
    parse_time,
)

PATH = "/advance-reservations"
ACTIVE = ("w", "r", "E")
SHOWN = ("name", "account", "state", "start", "end", "duration", "systems", "hosts", "requires", "pools", "count",
         "acl", "mail", "error_handling")
SETS = ("systems", "hosts", "pools", "acl")


def shown(ar):
    if not ar:
        return {}
    view = fields(ar, SHOWN, SETS)
    mail = ar.get("mail") or {}
    view["mail"] = {"events": mail.get("events") or "", "to": sorted(mail.get("to") or [])}
    return view


def mail_events(value):
    """The canonical form of -m flags: letters of "bea" in that order, "n", or ""; ValueError otherwise."""
    text = "".join(value.replace(",", " ").split()).lower()
    if text == "n":
        return "n"
    if set(text) - set("bea"):
        raise ValueError("mail_events: %r is not a set of mail events: any of b (begin), e (end) and a (error), "
                         "for example bea, or n for none" % value)
    return "".join(letter for letter in "bea" if letter in text)


def event_letters(value):
    """Mail events compared: the letters of "bea" in that order ("n" and "" both mean no mail)."""
    return "".join(letter for letter in "bea" if letter in (value or "").lower())


def plain(tree):
    """A requirements tree for comparison: keys sorted, scalars as text (8192 equals "8192")."""
    if isinstance(tree, dict):
        return dict((str(k), plain(v)) for k, v in tree.items())
    if isinstance(tree, (list, tuple)):
        return [plain(v) for v in tree]
    if isinstance(tree, str):
        return tree
    return json.dumps(tree)


def same_time(current, wanted):
    return bool(current) and parse_time(current) == wanted


def listed(values):
    return "[%s]" % ", ".join(str(v) for v in values)


class Wanted:
    """The options, checked and normalised before any call."""

    def __init__(self, module):
        params = module.params
        self.params = params
        self.name = (params["name"] or "").strip()
        if not self.name:
            module.fail_json(msg="name: give the advance reservation a name (it is how the task finds it again)")
        try:
            self.start = parse_time(params["start"], "start") if params["start"] else None
            self.end = parse_time(params["end"], "end") if params["end"] else None
            self.duration = parse_duration(params["duration"], "duration") if params["duration"] else None
            self.events = mail_events(params["mail_events"]) if params["mail_events"] is not None else None
        except ValueError as error:
            module.fail_json(msg=str(error))
        if self.start and self.end and self.end <= self.start:
            module.fail_json(msg="end: %s is not after start %s" % (format_time(self.end), format_time(self.start)))
        if self.start and self.end and self.duration is not None:
            window = (self.end - self.start).total_seconds()
            if abs(window - self.duration) >= 1:
                module.fail_json(msg="start, end and duration disagree: from %s to %s is %d s, duration says %d s; "
                                 "give two of them" % (format_time(self.start), format_time(self.end), window,
                                                       self.duration))
        if params["count"] is not None and params["count"] < 1:
            module.fail_json(msg="count: must be 1 or more, not %d" % params["count"])
        self.hosts = self.clean(params["hosts"], lower=True)
        self.pools = self.clean(params["pools"])
        self.acl = self.clean(params["acl"])
        self.mail_to = self.clean(params["mail_to"])
        self.release = self.clean(params["release"], lower=True)

    @staticmethod
    def clean(values, lower=False):
        if values is None:
            return None
        values = [v.strip().lower() if lower else v.strip() for v in values]
        return list(dict.fromkeys(v for v in values if v))

    def mail(self, current=None):
        """The whole mail setting: what is asked for, the rest as it is."""
        current = current or {}
        return {"events": self.events if self.events is not None else (current.get("events") or ""),
                "to": self.mail_to if self.mail_to is not None else list(current.get("to") or [])}

    def body(self):
        """The POST body: the options given."""
        params = self.params
        body = {"name": self.name}
        if self.start:
            body["start"] = format_time(self.start)
        if self.end:
            body["end"] = format_time(self.end)
        if self.duration is not None:
            body["duration"] = int(round(self.duration))
        for key, value in (("hosts", self.hosts), ("pools", self.pools), ("acl", self.acl)):
            if value is not None:
                body[key] = value
        for key in ("requires", "count", "error_handling", "account"):
            if params[key] is not None:
                body[key] = params[key]
        if self.events is not None or self.mail_to is not None:
            body["mail"] = dict((k, v) for k, v in (("events", self.events), ("to", self.mail_to)) if v is not None)
        return body

    # -- an existing AR ---------------------------------------------------------------------
    def fixed_differences(self, ar):
        """[(option, the AR's value, the asked value)] for what cannot change on a granted AR."""
        params = self.params
        found = []
        if self.start and not same_time(ar.get("start"), self.start):
            found.append(("start", ar.get("start"), format_time(self.start)))
        if self.hosts is not None and sorted(set(h.lower() for h in ar.get("hosts") or [])) != sorted(self.hosts):
            found.append(("hosts", listed(sorted(ar.get("hosts") or [])), listed(sorted(self.hosts))))
        if params["requires"] is not None and plain(ar.get("requires")) != plain(params["requires"]):
            found.append(("requires", json.dumps(ar.get("requires"), sort_keys=True),
                          json.dumps(params["requires"], sort_keys=True)))
        if self.pools is not None and sorted(set(ar.get("pools") or [])) != sorted(self.pools):
            found.append(("pools", listed(sorted(ar.get("pools") or [])), listed(sorted(self.pools))))
        if params["count"] is not None and ar.get("count") != params["count"]:
            found.append(("count", ar.get("count"), params["count"]))
        if params["account"] is not None and (ar.get("account") or "") != params["account"]:
            found.append(("account", ar.get("account"), params["account"]))
        if params["error_handling"] is not None and (ar.get("error_handling") or "soft") != params["error_handling"]:
            found.append(("error_handling", ar.get("error_handling"), params["error_handling"]))
        return found

    def end_for(self, ar):
        """The end asked for an existing AR (end, or its start plus duration), or None."""
        if self.end:
            return self.end
        if self.duration is not None and ar.get("start"):
            return parse_time(ar["start"]) + timedelta(seconds=self.duration)
        return None

    def changes(self, ar):
        """The PATCH body: what qralter can change and differs."""
        change = {}
        end = self.end_for(ar)
        if end is not None and not same_time(ar.get("end"), end):
            if self.end:
                change["end"] = format_time(self.end)
            else:
                change["duration"] = int(round(self.duration))
        if self.acl is not None:
            owner = set([ar.get("owner")])  # an acl that differs only by the owner is the same
            if set(ar.get("acl") or []) | owner != set(self.acl) | owner:
                change["acl"] = self.acl
        mail = ar.get("mail") or {}
        events_differ = self.events is not None and event_letters(mail.get("events")) != event_letters(self.events)
        to_differ = self.mail_to is not None and sorted(set(mail.get("to") or [])) != sorted(self.mail_to)
        if events_differ or to_differ:
            change["mail"] = self.mail(mail)
        given_back = set(r.get("system") for r in ar.get("released") or [])
        release = [fqdn for fqdn in self.release or [] if fqdn not in given_back]  # an unknown one: the server says
        if release:
            change["release"] = release
        return change

    @staticmethod
    def changed(ar, change):
        """The AR with the changes applied (check mode; or when the server answers without a body)."""
        after = dict((k, v) for k, v in dict(ar, **change).items() if k != "release")
        if change.get("release"):
            after["systems"] = [s for s in ar.get("systems") or [] if s not in change["release"]]
            after["released"] = list(ar.get("released") or []) + [{"system": s, "at": None} for s in change["release"]]
        start = parse_time(ar["start"]) if ar.get("start") else None
        if "end" in change and start:
            after["duration"] = int((parse_time(change["end"]) - start).total_seconds())
        if "duration" in change and start:
            after["end"] = format_time(start + timedelta(seconds=change["duration"]))
        return after


def reasons_text(reasons, detail=""):
    """The 409 answer's reasons as words: what ruled out how many systems (unless the detail says it already),
    which systems are booked when."""
    if not isinstance(reasons, dict):
        return ""
    parts = []
    ruled_out = reasons.get("ruled_out") or {}
    if isinstance(ruled_out, dict) and ruled_out and "ruled out" not in detail:
        parts.append("ruled out: " + ", ".join("%s (%s)" % (why, count) for why, count in sorted(ruled_out.items())))
    busy = reasons.get("busy") or []
    if isinstance(busy, list) and busy:
        parts.append("busy: " + ", ".join("%s from %s until %s" % (
            b.get("system"), b.get("from") or "now", b.get("until") or "further notice")
            for b in busy if isinstance(b, dict)))
    return "; ".join(parts)


def not_granted(name, detail, reasons):
    detail = detail or "no reason given"
    if detail.lower().startswith("cannot grant: "):
        detail = detail[len("cannot grant: "):]
    text = "advance reservation %s cannot be granted: %s" % (name, detail)
    more = reasons_text(reasons, detail)
    return "%s (%s)" % (text, more) if more else text


def refusal(error, name):
    """A refused create (or validate-only) as one sentence that says what to do."""
    problem = error.problem or {}
    if error.status == 409:
        return not_granted(name, problem.get("detail") or error.message, problem.get("reasons"))
    if error.status == 403 and "arusers" not in error.message:
        return ("%s (only administrators and members of the arusers group may create advance reservations)"
                % error.message)
    if error.status == 429:
        text = "advance reservation %s refused: %s" % (name, error.message)
        if "max_advance_reservations" not in text:
            text += (" (the server's max_advance_reservations limit of active advance reservations is reached - "
                     "0 turns them off; delete one that is no longer needed or wait until one ends)")
        return text
    return error.message


def find(client, name):
    """The caller's active ARs with this name."""
    return [ar for ar in client.get(PATH) or [] if ar.get("name") == name and ar.get("state") in ACTIVE]


def present(module, client, wanted, found):
    name = wanted.name
    if len(found) > 1:
        module.fail_json(msg="several active advance reservations are named %s (ids %s); delete them "
                         "(state=absent) and create one again" % (name, ", ".join(str(a["id"]) for a in found)))
    if not found:
        if wanted.end is None and wanted.duration is None:
            module.fail_json(msg="end or duration: needed to create advance reservation %s" % name)
        body = wanted.body()
        try:
            after = client.request("POST", PATH, body)[1]  # check mode: validate_only, the AR as it would be granted
            if module.check_mode:
                after = dict(after, id=None)  # nothing was made
        except LableaseError as error:
            module.fail_json(msg=refusal(error, name), status=error.status, problem=error.problem)
        module.exit_json(changed=True, advance_reservation=after, diff={"before": {}, "after": shown(after)})

    current = found[0]
    fixed = wanted.fixed_differences(current)
    if fixed:
        module.fail_json(msg="advance reservation %s (id %s) cannot change %s once granted: %s; delete it "
                         "(state=absent) and create it again" % (
                             name, current.get("id"), ", ".join(f[0] for f in fixed),
                             "; ".join("%s is %s, the task asks for %s" % f for f in fixed)),
                         advance_reservation=current)
    change = wanted.changes(current)
    if not change:
        module.exit_json(changed=False, advance_reservation=current,
                         diff={"before": shown(current), "after": shown(current)})
    after = wanted.changed(current, change)
    try:
        answer = client.request("PATCH", "%s/%d" % (PATH, current["id"]), change)[1]  # check mode: only validated
    except LableaseError as error:
        module.fail_json(msg="advance reservation %s (id %s): %s" % (name, current["id"], error.message),
                         status=error.status, problem=error.problem, advance_reservation=current)
    after = answer or after
    module.exit_json(changed=True, advance_reservation=after, diff={"before": shown(current), "after": shown(after)})


def absent(module, client, wanted, found):
    if not found:
        module.exit_json(changed=False, advance_reservation=None, deleted=[], diff={"before": {}, "after": {}})
    batch = client.batch()  # every one or none (check mode: only validated)
    for ar in found:
        batch.add("DELETE", "%s/%d" % (PATH, ar["id"]), query={"force": True} if module.params["force"] else None)
    try:
        batch.send()
    except LableaseError as error:
        message = "advance reservation %s (id %s): %s" % (
            wanted.name, ", ".join(str(ar["id"]) for ar in found), error.message)
        if error.status == 409 and not module.params["force"] and "force" not in error.message:
            message += " (force=true aborts the work bound to it and deletes it)"
        module.fail_json(msg=message, status=error.status, problem=error.problem, changed=False, deleted=[])
    deleted = [ar["id"] for ar in found]
    before = shown(found[0]) if len(found) == 1 else {"advance_reservations": [shown(ar) for ar in found]}
    module.exit_json(changed=True, advance_reservation=None, deleted=deleted, diff={"before": before, "after": {}})


def book(module, client, wanted):
    """The caller's active ARs named so made what state asks: one, changed where it differs, or none."""
    found = find(client, wanted.name)
    if module.params["state"] == "absent":
        absent(module, client, wanted, found)
    present(module, client, wanted, found)


def main():
    module = lablease_module(options(
        "name", "state", "force",
        start=dict(type="str"),
        end=dict(type="str"),
        duration=dict(type="str"),
        hosts=dict(type="list", elements="str"),
        requires=dict(type="dict"),
        pools=dict(type="list", elements="str"),
        count=dict(type="int"),
        acl=dict(type="list", elements="str"),
        mail_events=dict(type="str"),
        mail_to=dict(type="list", elements="str"),
        error_handling=dict(type="str", choices=["hard", "soft"]),
        account=dict(type="str"),
        release=dict(type="list", elements="str"),
    ), mutually_exclusive=[("hosts", "requires")])
    run(module, book, Wanted(module))


if __name__ == "__main__":
    main()
