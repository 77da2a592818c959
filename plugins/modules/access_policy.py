#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: access_policy
short_description: Manage the access policy (permission rules) of a lab system
version_added: 1.0.0
description:
  - Adds or removes rules of a system's access policy, or makes the policy exactly the rules given, and chooses
    whether the system uses a pool's policy instead of its own.
  - A rule grants one permission to a user, a group, or everybody.
  - Needs the C(edit_policy) permission on the system (its owner and administrators have it).
extends_documentation_fragment:
  - lablease.lab.api
  - lablease.lab.attributes.resource
  - lablease.lab.options.system
attributes:
  diff_mode:
    details: Shows the rules and C(use_pool_policy) before and after.
options:
  rules:
    description:
      - The rules to add, remove, or have exactly (O(state)).
      - Each names a O(rules[].permission) and exactly one of O(rules[].user), O(rules[].group) or
        O(rules[].everybody=true).
    type: list
    elements: dict
    suboptions:
      permission:
        description:
          - The permission granted.
        type: str
        required: true
        choices: [view, reserve, loan_self, loan_any, control_system, edit_system, edit_policy]
      user:
        description:
          - Granted to this user.
        type: str
      group:
        description:
          - Granted to the members of this group.
        type: str
      everybody:
        description:
          - Granted to everybody.
        type: bool
        default: false
  state:
    description:
      - V(present) adds the rules that are missing; V(absent) removes the rules listed; V(exact) makes the policy
        exactly O(rules) (V([]) removes every rule, which leaves the system to its owner and administrators).
      - Rules not listed are left alone with V(present) and V(absent).
    type: str
    choices: [present, absent, exact]
    default: present
  use_pool_policy:
    description:
      - Use the access policy of this pool (one the system is in) instead of the system's own rules.
      - V('') goes back to the system's own rules. Not given - left as it is.
    type: str
  force:
    description:
      - Removing or replacing rules, or changing O(use_pool_policy), is refused when it would break an advance
        reservation (a user of its ACL could no longer use the system).
      - With O(force=true) the change is made anyway, and that advance reservation goes into error.
      - Adding rules never needs it.
    type: bool
    default: false
seealso:
  - module: lablease.lab.pool
  - module: lablease.lab.group
"""

EXAMPLES = r"""
- name: Let the gpu-team reserve and lend s1.lab.test, and bob edit it
  lablease.lab.access_policy:
    system: s1.lab.test
    rules:
      - {permission: reserve, group: gpu-team}
      - {permission: loan_self, group: gpu-team}
      - {permission: edit_system, user: bob}

- name: Nobody but the team may see or reserve it any more
  lablease.lab.access_policy:
    system: s1.lab.test
    state: exact
    rules:
      - {permission: view, group: gpu-team}
      - {permission: reserve, group: gpu-team}

- name: Take bob's rule away even though it breaks an advance reservation of his
  lablease.lab.access_policy:
    system: s1.lab.test
    state: absent
    rules:
      - {permission: reserve, user: bob}
    force: true

- name: Everybody may see and reserve it again
  lablease.lab.access_policy:
    system: s1.lab.test
    rules:
      - {permission: view, everybody: true}
      - {permission: reserve, everybody: true}
"""

RETURN = r"""
policy:
  description: The policy after the task (in check mode, as it would be).
  returned: always
  type: dict
  contains:
    system:
      description: The system.
      type: str
      sample: s1.lab.test
    use_pool_policy:
      description: The pool whose policy the system uses, or null.
      type: str
    rules:
      description: The rules, each C({id, permission, user, group, everybody}) (C(id) null in check mode for a new rule).
      type: list
      elements: dict
added:
  description: The rules added (or that would be).
  returned: always
  type: list
  elements: dict
removed:
  description: The rules removed (or that would be).
  returned: always
  type: list
  elements: dict
"""

from ansible_collections.lablease.lab.plugins.module_utils.module import options
from ansible_collections.lablease.lab.plugins.module_utils.resource import Resource


def key(rule):
    return (rule["permission"], rule.get("user") or None, rule.get("group") or None, bool(rule.get("everybody")))


def body(rule):
    """The rule as the server takes it."""
    out = {"permission": rule["permission"]}
    if rule.get("user"):
        out["user"] = rule["user"]
    elif rule.get("group"):
        out["group"] = rule["group"]
    else:
        out["everybody"] = True
    return out


def full(rule, rule_id=None):
    return {"id": rule_id, "permission": rule["permission"], "user": rule.get("user") or None,
            "group": rule.get("group") or None, "everybody": bool(rule.get("everybody"))}


def shown(policy):
    rules = sorted(("%s:%s" % (r["permission"], "everybody" if r.get("everybody") else (
        "user=%s" % r["user"] if r.get("user") else "group=%s" % r.get("group"))) for r in policy.get("rules") or []))
    return {"use_pool_policy": policy.get("use_pool_policy"), "rules": rules}


class AccessPolicy(Resource):
    key = "policy"
    absent_state = None  # the policy always exists; state says what to do with the rules given

    def validate(self):
        self.extra = {"added": [], "removed": []}
        self.wanted = []
        for index, rule in enumerate(self.params["rules"] or []):
            whom = [k for k in ("user", "group") if rule.get(k)] + (["everybody"] if rule.get("everybody") else [])
            if len(whom) != 1:
                self.module.fail_json(msg="rules[%d]: give exactly one of user, group or everybody: true (got %s)" % (
                    index, ", ".join(whom) or "none"))
            if key(rule) not in [key(r) for r in self.wanted]:
                self.wanted.append(rule)

    def read(self):
        self.path = "/systems/%s/access-policy" % self.client.quote(self.params["system"].strip().lower())
        return self.client.get(self.path)

    def plan(self, current):
        have = current.get("rules") or []
        have_keys = [key(r) for r in have]
        wanted_keys = [key(r) for r in self.wanted]
        state, pool = self.params["state"], self.params["use_pool_policy"]
        if state == "absent":
            added, removed = [], [r for r in have if key(r) in wanted_keys]
        else:
            added = [full(r) for r in self.wanted if key(r) not in have_keys]
            removed = [r for r in have if key(r) not in wanted_keys] if state == "exact" else []
        self.extra = {"added": added, "removed": removed}
        plan = dict((k, v) for k, v in (("added", added), ("removed", removed)) if v)
        if pool is not None and (pool or None) != current.get("use_pool_policy"):
            plan["use_pool_policy"] = pool or None
        return plan

    def predict(self, current, plan):
        removed = plan.get("removed", [])
        predicted = dict(current, rules=[r for r in current.get("rules") or [] if r not in removed] + plan.get("added", []))
        if "use_pool_policy" in plan:
            predicted["use_pool_policy"] = plan["use_pool_policy"]
        return predicted

    def update(self, current, plan):
        exact, rules_change = self.params["state"] == "exact", "added" in plan or "removed" in plan
        # ?force=true on the requests that may break an advance reservation (PUT, rule DELETE); adding a rule cannot
        forced = {"force": True} if self.params["force"] else None
        if exact or not rules_change:  # one PUT: the whole rule set and/or the pool
            put = {"rules": [body(r) for r in self.wanted]} if exact and rules_change else {}
            if "use_pool_policy" in plan:
                put["use_pool_policy"] = plan["use_pool_policy"]
            self.client.request("PUT", self.path, put, query=forced)
            return None
        batch = self.client.batch()  # one transaction: a refused rule changes nothing
        if "use_pool_policy" in plan:
            batch.add("PUT", self.path, {"use_pool_policy": plan["use_pool_policy"]}, query=forced)
        for rule in plan.get("added", []):
            batch.add("POST", self.path + "/rules", body(rule))
        for rule in plan.get("removed", []):
            batch.add("DELETE", "%s/rules/%d" % (self.path, rule["id"]), query=forced)
        batch.send()
        return None  # read back

    shown = staticmethod(shown)


def main():
    AccessPolicy.main(options(
        "system", "force",
        rules=dict(type="list", elements="dict", options=dict(
            permission=dict(type="str", required=True, choices=[
                "view", "reserve", "loan_self", "loan_any", "control_system", "edit_system", "edit_policy"]),
            user=dict(type="str"),
            group=dict(type="str"),
            everybody=dict(type="bool", default=False),
        )),
        state=dict(type="str", default="present", choices=["present", "absent", "exact"]),
        use_pool_policy=dict(type="str"),
    ), required_if=[("state", "exact", ("rules",))])


if __name__ == "__main__":
    main()
