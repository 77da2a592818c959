#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: reservation
short_description: Reserve a lab system for a limited time, or return it
version_added: 1.0.0
description:
  - Reserves a system on a lablease server for the calling user, now or in advance, or returns it.
  - Idempotent. With O(state=present), a reservation the caller already holds on the system is kept
    (not changed); it is extended when a later end is asked. A system held by somebody else fails the task,
    saying by whom and until when. With O(state=absent), the caller's reservations on the system are returned;
    nothing held means nothing changed. The reservation a recipe runs on (kind V(recipe)) is not returned; the
    task fails with the server's answer naming the recipe and its job; it ends with the recipe (cancel the job
    with M(lablease.lab.job), or finish the recipe).
  - Every reservation has an end (the server's default, 24 hours unless the site changed it, when neither
    O(duration) nor O(end) is given), so a crashed play never strands a system.
  - With O(wait=true), a system held by somebody else does not fail the task; the reservation joins the server's
    queue (the same queue as jobs, by priority then age) and the task blocks until the server grants it, at most
    O(wait_timeout) seconds. Its O(duration) counts from the grant.
extends_documentation_fragment:
  - lablease.lab.api
  - lablease.lab.attributes.resource
attributes:
  check_mode:
    details: Nothing is written. The server is asked what would happen (V(validate_only)), so the task fails
      where the real run would (a duration past the site maximum, a system someone else holds) and otherwise
      says what would be reserved, extended or returned; a reservation that would wait is not waited for.
options:
  system:
    description:
      - Fully qualified name of the system, for example V(s1.lab.test).
    type: str
    required: true
    aliases: [fqdn, name]
  state:
    description:
      - V(present) makes sure the caller holds a reservation on the system; V(absent) returns it.
    type: str
    choices: [present, absent]
    default: present
  duration:
    description:
      - How long to keep the system, counted from the reservation's start.
      - V(4h), V(30m), V(2d), V(1w), V(1h30m), ISO 8601 V(PT4H), V(1:30:00), or V(unlimited) where the site allows it.
      - When the caller already holds the system, a O(duration) that ends later than the reservation extends it.
      - Mutually exclusive with O(end).
      - The forms a duration may take are listed once, in L(Times and durations,https://github.com/lablease/lablease/blob/main/docs/api.md#times-and-durations).
    type: str
  start:
    description:
      - When the reservation begins, as an RFC 3339 time with a zone (V(2026-11-22T14:00:00Z)). Default now.
      - A later start reserves in advance; the reservation then matches only an existing one with the same start.
    type: str
  end:
    description:
      - When the reservation ends, as an RFC 3339 time with a zone. Mutually exclusive with O(duration).
      - When the caller already holds the system, a later O(end) extends the reservation; an earlier one is ignored
        (the module never shortens a reservation).
    type: str
  return_loan:
    description:
      - Also return the caller's loan of the system when this reservation is returned.
    type: bool
    default: false
  heartbeat:
    description:
      - Return the reservation early when no heartbeat came for this long (for example V(10m)), on top of its end.
      - Send heartbeats with O(keepalive=true) while the work runs.
      - When the caller already holds the system, a different O(heartbeat) changes the reservation's interval (the
        next heartbeat is then due that long from now), and V(none) stops its heartbeats, so that only its end
        returns it (for example to keep a system for a person to look at once the pipeline that sent the
        heartbeats has ended).
      - The forms a duration may take are listed once, in L(Times and durations,https://github.com/lablease/lablease/blob/main/docs/api.md#times-and-durations).
    type: str
  keepalive:
    description:
      - With O(state=present), send a heartbeat for the caller's reservation if it was made with O(heartbeat).
      - This writes the time of the heartbeat, so the task reports C(changed).
    type: bool
    default: false
  id:
    description:
      - Act on this reservation only (as returned in RV(reservation.id)), for example to return exactly the
        reservation a play made.
    type: int
  wait:
    description:
      - When the system is taken, wait in the server's queue until it is granted instead of failing.
      - On a timeout the task fails and the waiting reservation leaves the queue (it is cancelled), so a play that
        gave up never gets the system later.
      - Not with O(start) or O(end), since a waiting reservation starts when it is granted; use O(duration).
    type: bool
    default: false
  wait_timeout:
    description:
      - With O(wait=true), how many seconds to wait for the grant at most.
    type: int
    default: 3600
  take_by:
    description:
      - With O(wait=true), the server returns the reservation unless it is confirmed (a heartbeat, O(keepalive=true),
        or an extension) this long after it is granted, for example V(15m).
    type: str
  request_id:
    description:
      - A client-chosen id that makes the reserve call safe to retry; the server answers a known id with the same reservation.
      - The default is derived (C(ansible-) and a hash) from the system name, O(start) and the id of the caller's
        last ended reservation on the system. It stays the same for every run of the task until a reservation it made
        ends, so a retried call or a re-run play finds its own reservation instead of booking again (a re-run also
        finds it by listing the caller's reservations first).
    type: str
  purpose:
    description:
      - What the system is for, shown with the caller as its holder (the API, the CLI, the inventory, the
        system's page); sent with a new reservation.
      - Required by a site that sets C(require_purpose) - a new reservation without one then fails the task.
    type: str
  force:
    description:
      - Administrators only - reserve an idle Automated system although it takes a pool below its
        C(automation_floor) (for anybody else the server refuses it with or without O(force)).
      - Without O(force), a reservation that would take a pool below its floor fails the task, or with O(wait=true)
        waits until the pool has an idle Automated system to spare.
    type: bool
    default: false
  healthy_within:
    description:
      - Only a system that passed a health check this recently, for example V(24h); sent with a new reservation.
      - Without O(wait), the task fails when the system has no such pass. With O(wait=true), the server grants the
        system only once it has one, running a check on it first when needed.
    type: str
notes:
  - "The module runs on the controller or any host that can reach the server; use C(delegate_to: localhost) or a C(localhost) play."
seealso:
  - module: lablease.lab.reservation_info
  - module: lablease.lab.system_info
"""

EXAMPLES = r"""
- name: Reserve s1.lab.test for eight hours, with a heartbeat so that a crashed pipeline frees it within ten minutes
  lablease.lab.reservation:
    system: s1.lab.test
    duration: 8h
    heartbeat: 10m
    url: "{{ lookup('ansible.builtin.env', 'LABLEASE_URL') }}"
    token: "{{ lookup('ansible.builtin.env', 'LABLEASE_TOKEN') }}"

- name: Reserve s1.lab.test for four hours (not changed - it is already mine for longer)
  lablease.lab.reservation:
    system: s1.lab.test
    duration: 4h
  register: lease

- name: Show when it ends
  ansible.builtin.debug:
    msg: "{{ lease.reservation.system }} is mine until {{ lease.reservation.end }} ({{ lease.reservation.seconds_left }} s left)"

- name: Send a heartbeat while the work goes on
  lablease.lab.reservation:
    system: s1.lab.test
    keepalive: true

- name: Keep it until a later time
  lablease.lab.reservation:
    system: s1.lab.test
    end: "2030-01-01T18:00:00Z"

- name: Wait (at most two hours) for s2.lab.test, then hold it for four hours from when it is granted
  lablease.lab.reservation:
    system: s2.lab.test
    duration: 4h
    wait: true
    wait_timeout: 7200

- name: Leave the line, or give it back once granted
  lablease.lab.reservation:
    system: s2.lab.test
    state: absent

- name: Return it
  lablease.lab.reservation:
    system: s1.lab.test
    state: absent
"""

RETURN = r"""
reservation:
  description:
    - The reservation held (O(state=present)) or the last one returned (O(state=absent)); null when none.
    - In check mode, the reservation that would be made (without RV(reservation.id)).
  returned: always
  type: dict
  contains:
    id:
      description: The reservation's id.
      type: int
      sample: 42
    system:
      description: The system reserved.
      type: str
      sample: s1.lab.test
    user:
      description: Who holds it.
      type: str
      sample: alice
    kind:
      description: V(manual), or V(recipe) for a job's reservation.
      type: str
      sample: manual
    start:
      description: When it began or begins (RFC 3339, UTC).
      type: str
      sample: "2026-11-22T10:00:00Z"
    end:
      description: When it ends; null for an unlimited reservation.
      type: str
      sample: "2026-11-22T14:00:00Z"
    seconds_left:
      description: Seconds until the end; null when unlimited or returned.
      type: int
      sample: 14395
    state:
      description: V(active), V(upcoming), V(returned) or V(expired); in check mode with O(wait=true), V(waiting)
        when the system is taken now.
      type: str
      sample: active
    returned_at:
      description: When it was returned, or null.
      type: str
    return_loan:
      description: Whether returning it also returns the caller's loan.
      type: bool
    heartbeat:
      description: Heartbeat interval in seconds, or null.
      type: int
    last_heartbeat:
      description: Time of the last heartbeat, or null.
      type: str
    due:
      description: When the server will return it unless extended or kept alive.
      type: str
    request_id:
      description: The request id it was made with.
      type: str
      sample: ansible-5f0c7e0a2d7b4e1c9a3f6b21
    purpose:
      description: What the holder said it is for, or null.
      type: str
    advance_reservation:
      description: The id of the advance reservation it is inside, or null.
      type: int
    position:
      description: While it waits (O(wait)) - 1 + the reservations and recipe sets ahead of it; null otherwise.
      type: int
    estimated_start:
      description: While it waits - when a system it may get is booked until; null otherwise.
      type: str
    wait:
      description: For a reservation asked with O(wait) - its C(status), C(queued_at), C(granted_at), C(duration),
        C(take_by) and C(confirmed_at).
      type: dict
    waits_for:
      description: For a reservation asked with O(wait) - what it waits (or waited) for, in words.
      type: str
      sample: arch = x86_64 and (pool = ci)
returned:
  description: Ids of the reservations returned (O(state=absent)), or that would be returned in check mode.
  returned: always
  type: list
  elements: int
  sample: [42]
"""

import hashlib
import time
from datetime import timedelta

from ansible_collections.lablease.lab.plugins.module_utils.client import LableaseError
from ansible_collections.lablease.lab.plugins.module_utils.module import lablease_module, options, run
from ansible_collections.lablease.lab.plugins.module_utils.times import (
    format_time,
    parse_duration,
    parse_time,
)

MAX_REQUEST_ID_GENERATIONS = 20
POLL_SECONDS = 5  # between two looks at a waiting reservation


def derive_request_id(system, start=None, previous=None):
    """ansible-<hash of the system, the asked start and the caller's last ended reservation on it>.

    The same for every run of the same task until a reservation it made ends, so a retried
    or re-run play finds its own reservation; a fresh one after that.
    """
    seed = "lablease.lab.reservation|%s|%s|%s" % (system.lower(), start or "now", previous or 0)
    return "ansible-" + hashlib.sha256(seed.encode("utf-8")).hexdigest()[:24]


def next_request_id(request_id, ended):
    """The deterministic successor of a request id whose reservation has ended."""
    suffix = "-r%s" % ended["id"]
    return (request_id[:128 - len(suffix)] + suffix) if len(request_id) + len(suffix) > 128 else request_id + suffix


class Reservations:
    def __init__(self, module, client):
        self.module = module
        self.client = client
        self.params = module.params
        self.system = self.params["system"].strip().lower()

    def fail(self, msg, **kwargs):
        self.module.fail_json(msg=msg, **kwargs)

    def check_input(self):
        params = self.params
        try:
            if params["duration"] and params["duration"].strip().lower() != "unlimited":
                parse_duration(params["duration"], "duration")
            self.heartbeat = self.asked_heartbeat()
            self.start = parse_time(params["start"], "start") if params["start"] else None
            self.end = parse_time(params["end"], "end") if params["end"] else None
            if params["take_by"]:
                parse_duration(params["take_by"], "take_by")
        except ValueError as error:
            self.fail(str(error))
        if params["wait"] and (self.start or self.end):
            self.fail("wait cannot be combined with start or end: a waiting reservation starts when it is granted "
                      "(give duration)")
        if self.heartbeat == 0 and params["keepalive"]:
            self.fail("keepalive needs a heartbeat; heartbeat: none stops them")
        if params["take_by"] and not params["wait"]:
            self.fail("take_by is only for a reservation that waits (wait: true)")
        if self.start and self.end and self.end <= self.start:
            self.fail("end (%s) must be after start (%s)" % (params["end"], params["start"]))

    def asked_heartbeat(self):
        """The heartbeat asked for, in seconds: None when not given, 0 for V(none) (no heartbeat)."""
        beat = (self.params["heartbeat"] or "").strip()
        if not beat:
            return None
        return 0 if beat.lower() == "none" else int(parse_duration(beat, "heartbeat"))

    # -- finding what the caller holds ----------------------------------------------
    def mine(self):
        """The caller's open (not returned) reservations on the system, newest first."""
        if self.params["id"] is not None:
            one = self.client.get_or_none("/reservations/%d" % self.params["id"])
            if one is None or one.get("system") != self.system:
                if self.params["state"] == "absent":
                    return []
                self.fail("no reservation %s on %s" % (self.params["id"], self.system))
            return [one] if one.get("returned_at") is None else []
        found = self.client.get_all("/reservations", {"system": self.system, "active": True, "user": "me"})
        if self.start is not None:
            found = [r for r in found if parse_time(r["start"]) == self.start]
        return found

    def wanted_end(self, reservation):
        """The end the caller asks for an existing reservation, or None when no extension is asked."""
        if self.end is not None:
            return self.end
        duration = self.params["duration"]
        if duration and duration.strip().lower() != "unlimited":
            return parse_time(reservation["start"]) + timedelta(seconds=parse_duration(duration))
        return None

    # -- present ------------------------------------------------------------------------
    def present(self):
        system = self.client.get_or_none("/systems/%s" % self.client.quote(self.system))
        if system is None:
            self.fail("no system named %s on the lablease server at %s (or you may not see it)"
                      % (self.system, self.client.url))
        held = self.mine()
        if self.start is None and self.params["id"] is None:
            held = [r for r in held if r.get("state") == "active"]
        if held:
            return self.keep(held[0])
        if self.params["keepalive"]:
            self.fail("you hold no reservation on %s to keep alive (it may have ended or missed its heartbeat)"
                      % self.system)
        return self.reserve(system)

    def keep(self, current):
        changed, after, actions = False, dict(current), []
        wanted = self.wanted_end(current)
        old_end = parse_time(current["end"]) if current.get("end") else None
        if wanted is not None and old_end is not None and wanted > old_end:
            changed = True
            after["end"] = format_time(wanted)
            actions.append("extend")
        if self.heartbeat is not None and self.heartbeat != (current.get("heartbeat") or 0):
            changed = True
            after["heartbeat"] = self.heartbeat or None
            actions.append("interval")
        if self.params["keepalive"]:
            if not after.get("heartbeat"):
                self.fail("reservation %s on %s was made without a heartbeat; keepalive needs one (heartbeat option)"
                          % (current["id"], self.system))
            changed = True
            actions.append("heartbeat")
        if changed:  # one batch: extended, interval changed and renewed, or none of them (check mode: only validated)
            batch = self.client.batch()
            change = {}  # the end and the interval in one PATCH, so they change together or not at all
            if "extend" in actions:
                change["end"] = after["end"]
            if "interval" in actions:
                change["heartbeat"] = self.params["heartbeat"] if self.heartbeat else None
            if change:
                batch.add("PATCH", "/reservations/%d" % current["id"], change)
            if "heartbeat" in actions:
                batch.add("POST", "/reservations/%d/heartbeat" % current["id"])
            after = batch.send()[-1] or after
        self.exit(changed, current, after, returned=[])

    def reserve(self, system):
        body = {"system": self.system, "return_loan": self.params["return_loan"]}
        for key in ("duration", "purpose", "force", "healthy_within"):
            if self.params[key]:
                body[key] = self.params[key]
        if self.heartbeat:
            body["heartbeat"] = self.params["heartbeat"]
        if self.start:
            body["start"] = format_time(self.start)
        if self.end:
            body["end"] = format_time(self.end)
        if self.params["wait"]:
            body["wait"] = True
            if self.params["take_by"]:
                body["take_by"] = self.params["take_by"]
        request_id = self.params["request_id"]
        if not request_id:
            ended = self.client.get_all("/reservations", {"system": self.system, "active": False, "user": "me"})
            last = max([r["id"] for r in ended] or [0])
            request_id = derive_request_id(self.system, self.params["start"], last)
        for dummy in range(MAX_REQUEST_ID_GENERATIONS):
            body["request_id"] = request_id
            # A reserve with a request_id is idempotent on the server, so the client may retry it.
            # In check mode the server only validates it: the answer is what it would make, nothing is kept.
            status, made = self.client.request("POST", "/reservations", body, idempotent=True)
            if made.get("state") == "waiting":  # queued now, or by an earlier run of this task
                self.exit(True, None, self.made(made, status) if self.module.check_mode else self.wait_for(made),
                          returned=[])
            if made.get("returned_at") is None and made.get("system") == self.system:
                self.exit(status == 201, None, self.made(made, status), returned=[])
            if self.params["request_id"]:
                self.fail("request_id %s belongs to reservation %s of %s, which is %s; choose another request_id"
                          % (request_id, made.get("id"), made.get("system"), made.get("state")))
            request_id = next_request_id(request_id, made)
        self.fail("could not derive a fresh request_id for %s; pass request_id" % self.system)

    def made(self, reservation, status):
        """The reservation answered; in check mode one that would be made has no id (nothing was made)."""
        return dict(reservation, id=None) if self.module.check_mode and status == 201 else reservation

    def wait_for(self, waiting):
        """Poll the waiting reservation until it is granted; on a timeout leave the queue and fail."""
        deadline = time.time() + self.params["wait_timeout"]
        current = waiting
        while current.get("state") == "waiting":
            if time.time() >= deadline:
                self.client.request("DELETE", "/reservations/%d" % current["id"])
                self.fail("%s was not granted within %s seconds (position %s, estimated start %s); reservation %s "
                          "left the queue" % (self.system, self.params["wait_timeout"], current.get("position"),
                                              current.get("estimated_start") or "unknown", current["id"]))
            time.sleep(min(POLL_SECONDS, max(0.0, deadline - time.time())))
            current = self.client.get_or_none("/reservations/%d" % current["id"]) or {}
        if current.get("state") != "active" or current.get("system") != self.system:
            self.fail("reservation %s was %s before it was granted" % (waiting["id"], current.get("state", "removed")))
        return current

    # -- absent -------------------------------------------------------------------------
    def absent(self):
        held = self.mine()
        if held:
            held = self.give_back(held)
        returned = [reservation["id"] for reservation in held]
        last = held[0] if held else None
        if last is not None and not self.module.check_mode:
            last = self.client.get_or_none("/reservations/%d" % last["id"]) or last
        self.exit(bool(held), held[0] if held else None, None, returned=returned, answer=last)

    def give_back(self, held):
        """Return every reservation held, in one batch (all or none); the ones it returned."""
        for attempt in (1, 2):
            batch = self.client.batch()
            for reservation in held:
                batch.add("DELETE", "/reservations/%d" % reservation["id"])
            try:
                batch.send()
                return held
            except LableaseError as error:
                if attempt == 2 or error.status not in (409, 422):
                    raise
                # one was returned meanwhile (by the worker): give back what is still held
                still = [r["id"] for r in self.mine()]
                if len(still) == len(held):
                    raise
                held = [r for r in held if r["id"] in still]
                if not held:
                    return []
        return held

    # -- answer -------------------------------------------------------------------------
    def exit(self, changed, before, after, returned, answer=None):
        diff = {"before": self._diffable(before), "after": self._diffable(after)}
        result = after if self.params["state"] == "present" else answer
        self.module.exit_json(changed=changed, reservation=result, returned=returned, diff=diff)

    @staticmethod
    def _diffable(reservation):
        if not reservation:
            return {}
        keys = ("id", "system", "user", "start", "end", "heartbeat", "return_loan", "state")
        return dict((k, reservation.get(k)) for k in keys if k in reservation)


def lease(module, client):
    """Hold a reservation of the system (state=present), or return the caller's (state=absent)."""
    job = Reservations(module, client)
    job.check_input()
    if module.params["state"] == "present":
        job.present()
    else:
        job.absent()


def main():
    module = lablease_module(options(
        "state", "force",
        system=dict(type="str", required=True, aliases=["fqdn", "name"]),
        duration=dict(type="str"),
        start=dict(type="str"),
        end=dict(type="str"),
        return_loan=dict(type="bool", default=False),
        heartbeat=dict(type="str"),
        keepalive=dict(type="bool", default=False),
        id=dict(type="int"),
        request_id=dict(type="str"),
        purpose=dict(type="str"),
        healthy_within=dict(type="str"),
        wait=dict(type="bool", default=False),
        wait_timeout=dict(type="int", default=3600),
        take_by=dict(type="str"),
    ), mutually_exclusive=[("duration", "end")])
    run(module, lease)


if __name__ == "__main__":
    main()
