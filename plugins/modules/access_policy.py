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
version_added: 0.1.0
description:
  - Adds or removes rules of a system's access policy, or makes the policy exactly the rules given, and chooses
    whether the system uses a pool's policy instead of its own.
  - A rule grants one permission to a user, a group, or everybody.
  - Needs the C(edit_policy) permission on the system (its owner and administrators have it).
author:
  - lablease developers (@lablease)
extends_documentation_fragment:
  - lablease.lab.api
attributes:
  check_mode:
    support: full
    description: Nothing is written; the answer shows the policy as it would be.
  diff_mode:
    support: full
    description: Shows the rules and C(use_pool_policy) before and after.
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
requirements:
  - Python 3.8 or later on the host that runs the module.
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

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.lablease.lab.plugins.module_utils.client import (
    LableaseError,
    api_argument_spec,
    module_client,
)


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


def main():
    module = AnsibleModule(
        argument_spec=api_argument_spec(
            system=dict(type="str", required=True, aliases=["fqdn"]),
            rules=dict(type="list", elements="dict", options=dict(
                permission=dict(type="str", required=True, choices=[
                    "view", "reserve", "loan_self", "loan_any", "control_system", "edit_system", "edit_policy"]),
                user=dict(type="str"),
                group=dict(type="str"),
                everybody=dict(type="bool", default=False),
            )),
            state=dict(type="str", default="present", choices=["present", "absent", "exact"]),
            use_pool_policy=dict(type="str"),
        ),
        required_if=[("state", "exact", ("rules",))],
        supports_check_mode=True,
    )
    params = module.params
    wanted = []
    for index, rule in enumerate(params["rules"] or []):
        whom = [k for k in ("user", "group") if rule.get(k)] + (["everybody"] if rule.get("everybody") else [])
        if len(whom) != 1:
            module.fail_json(msg="rules[%d]: give exactly one of user, group or everybody: true (got %s)" % (
                index, ", ".join(whom) or "none"))
        if key(rule) not in [key(r) for r in wanted]:
            wanted.append(rule)
    client = module_client(module)
    fqdn = params["system"].strip().lower()
    path = "/systems/%s/access-policy" % client.quote(fqdn)
    try:
        current = client.get(path)
        have = current.get("rules") or []
        have_keys = [key(r) for r in have]
        wanted_keys = [key(r) for r in wanted]
        state = params["state"]
        if state == "absent":
            added, removed = [], [r for r in have if key(r) in wanted_keys]
        else:
            added = [full(r) for r in wanted if key(r) not in have_keys]
            removed = [r for r in have if key(r) not in wanted_keys] if state == "exact" else []
        pool = None
        if params["use_pool_policy"] is not None:
            pool = params["use_pool_policy"] or None
        pool_change = params["use_pool_policy"] is not None and pool != current.get("use_pool_policy")
        if not added and not removed and not pool_change:
            module.exit_json(changed=False, policy=current, added=[], removed=[],
                             diff={"before": shown(current), "after": shown(current)})
        predicted = dict(current, rules=[r for r in have if r not in removed] + added)
        if pool_change:
            predicted["use_pool_policy"] = pool
        if module.check_mode:
            module.exit_json(changed=True, policy=predicted, added=added, removed=removed,
                             diff={"before": shown(current), "after": shown(predicted)})
        if state == "exact" or (pool_change and not added and not removed):
            put = {}
            if state == "exact" and (added or removed):
                put["rules"] = [body(r) for r in wanted]
            if pool_change:
                put["use_pool_policy"] = pool
            client.request("PUT", path, put)
        else:
            if pool_change:
                client.request("PUT", path, {"use_pool_policy": pool})
            for rule in added:
                client.request("POST", path + "/rules", body(rule))
            for rule in removed:
                client.delete_or_none("%s/rules/%d" % (path, rule["id"]))
        after = client.get(path)
        module.exit_json(changed=True, policy=after, added=added, removed=removed,
                         diff={"before": shown(current), "after": shown(after)})
    except LableaseError as error:
        module.fail_json(msg=error.message, status=error.status, problem=error.problem)


if __name__ == "__main__":
    main()
