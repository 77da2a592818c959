#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: pool
short_description: Create, change or delete a pool of lab systems
version_added: 1.0.0
description:
  - Makes sure a pool exists with the given description, owning group, automation floor and systems, or does not
    exist.
  - Only the options given are compared and changed.
  - A pool is created by a member of its owning group (administrators may create pools with no owning group);
    members of the owning group add and remove its systems.
extends_documentation_fragment:
  - lablease.lab.api
  - lablease.lab.attributes.resource
attributes:
  diff_mode:
    details: Shows the description, owning group, automation floor and systems before and after.
options:
  name:
    description:
      - The pool's name.
    type: str
    required: true
  state:
    description:
      - V(present) creates or updates the pool; V(absent) deletes it. Deleting is refused while a health check
        runs on the pool or a system uses its access policy (the error names each), unless O(force=true).
    type: str
    choices: [present, absent]
    default: present
  description:
    description:
      - What the pool is for.
    type: str
  owner_group:
    description:
      - The group whose members manage the pool.
    type: str
  automation_floor:
    description:
      - How many idle Automated systems of the pool are kept for the scheduler - a manual reservation or loan that
        would leave fewer is refused (administrators may force it).
      - V(0) is no floor. Not given - the floor is left as it is (V(0) for a new pool).
    type: int
  systems:
    description:
      - Systems (fqdns) of the pool, handled as O(systems_mode) says. Not given - the pool's systems are left alone.
    type: list
    elements: str
  systems_mode:
    description:
      - V(exact) makes O(systems) the pool's whole list (others are removed; V([]) empties the pool).
      - V(add) adds the systems listed; V(remove) removes them. Neither touches the others.
    type: str
    choices: [exact, add, remove]
    default: exact
  force:
    description:
      - Removing a system from the pool is refused when it would break an advance reservation (one that asked
        for this pool and holds the system).
      - With O(force=true) the system is removed anyway, and that advance reservation goes into error.
      - Deleting the pool (O(state=absent)) takes it too - its health checks are deleted and the systems that used
        its access policy use their own rules again.
    type: bool
    default: false
seealso:
  - module: lablease.lab.group
  - module: lablease.lab.access_policy
"""

EXAMPLES = r"""
- name: A pool of GPU systems, managed by the group gpu-team
  lablease.lab.pool:
    name: gpus
    description: systems with a GPU
    owner_group: gpu-team
    systems:
      - s1.lab.test
      - s2.lab.test

- name: Keep two idle Automated systems of the pool for the scheduler
  lablease.lab.pool:
    name: gpus
    automation_floor: 2

- name: Add one more system, leaving the others
  lablease.lab.pool:
    name: gpus
    systems: [s3.lab.test]
    systems_mode: add

- name: Take s1.lab.test out of the pool even though an advance reservation for the pool holds it
  lablease.lab.pool:
    name: gpus
    systems: [s1.lab.test]
    systems_mode: remove
    force: true

- name: Delete the pool
  lablease.lab.pool:
    name: gpus
    state: absent
"""

RETURN = r"""
pool:
  description: The pool after the task (in check mode, as it would be); null when it does not exist.
  returned: always
  type: dict
  contains:
    name:
      description: Its name.
      type: str
      sample: gpus
    description:
      description: Its description.
      type: str
    owner_group:
      description: The owning group, or null.
      type: str
    automation_floor:
      description: Idle Automated systems kept for the scheduler (0 - no floor).
      type: int
      sample: 2
    systems:
      description: Its systems.
      type: list
      elements: str
      sample: [s1.lab.test, s2.lab.test]
"""

from ansible_collections.lablease.lab.plugins.module_utils.client import list_plan
from ansible_collections.lablease.lab.plugins.module_utils.module import list_mode, options
from ansible_collections.lablease.lab.plugins.module_utils.resource import Resource


def shown(pool):
    if not pool:
        return {}
    return {"description": pool.get("description"), "owner_group": pool.get("owner_group"),
            "automation_floor": pool.get("automation_floor", 0), "systems": sorted(pool.get("systems") or [])}


class Pool(Resource):
    key = "pool"
    collection = "/pools"

    def plan(self, current):
        params = self.params
        fields = {}
        for key in ("description", "owner_group"):
            if params[key] is not None and (current is None or (current.get(key) or "") != params[key]):
                fields[key] = params[key]
        floor = params["automation_floor"]
        if floor is not None and (current.get("automation_floor", 0) if current else 0) != floor:
            fields["automation_floor"] = floor
        wanted = [s.strip().lower() for s in params["systems"]] if params["systems"] is not None else None
        adds, removes = list_plan(current["systems"] if current else [], wanted, params["systems_mode"])
        return dict((k, v) for k, v in (("fields", fields), ("adds", adds), ("removes", removes)) if v)

    def predict(self, current, plan):
        before = current or {"name": self.params["name"], "description": None, "owner_group": None,
                             "automation_floor": 0, "systems": []}
        predicted = dict(before, **plan.get("fields", {}))
        removes = plan.get("removes", [])
        predicted["systems"] = [s for s in before["systems"] if s not in removes] + plan.get("adds", [])
        return predicted

    def create(self, plan):
        batch = self.client.batch().add("POST", self.collection, dict(plan.get("fields", {}), name=self.params["name"]))
        return self.members(batch, plan)

    def update(self, current, plan):
        batch = self.client.batch()
        if plan.get("fields"):
            batch.add("PATCH", self.path, plan["fields"])
        return self.members(batch, plan)

    def members(self, batch, plan):
        """Send the pool's changes and its membership's as one batch: an unknown system changes nothing."""
        for fqdn in plan.get("adds", []):
            batch.add("POST", self.path + "/systems", {"fqdn": fqdn})
        forced = {"force": True} if self.params["force"] else None  # breaks an advance reservation if need be
        for fqdn in plan.get("removes", []):
            batch.add("DELETE", "%s/systems/%s" % (self.path, self.client.quote(fqdn)), query=forced)
        batch.send()
        return None  # read back

    shown = staticmethod(shown)


def main():
    Pool.main(options(
        "name", "state", "force",
        description=dict(type="str"),
        owner_group=dict(type="str"),
        automation_floor=dict(type="int"),
        systems=dict(type="list", elements="str"),
        systems_mode=list_mode(),
    ))


if __name__ == "__main__":
    main()
