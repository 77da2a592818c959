#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: health_check
short_description: Define, change or delete a health check run on lab systems
version_added: 1.0.0
description:
  - Makes sure a health check exists with the given scope, job and cadence, or does not exist.
  - A health check is a job the server's scheduler runs on a system like any recipe, to decide whether the system
    is healthy; a failed check makes an Automated system broken and tells its owner.
  - Only the options given are compared and changed. Only administrators define health checks.
extends_documentation_fragment:
  - lablease.lab.api
  - lablease.lab.attributes.resource
attributes:
  diff_mode:
    details: Shows the scope, cadence and job before and after.
options:
  name:
    description:
      - The check's name.
    type: str
    required: true
  state:
    description:
      - V(present) creates or updates the check; V(absent) deletes it.
    type: str
    choices: [present, absent]
    default: present
  system:
    description:
      - The check of this one system (its fqdn). Mutually exclusive with O(pool) and O(arch).
      - A system's own check wins over its pools', which win over its arch's.
    type: str
  pool:
    description:
      - The check of this pool's systems.
    type: str
  arch:
    description:
      - The check of this architecture's systems.
    type: str
  job:
    description:
      - The job to run, as the server's jobs take it - job XML as a string (for example from a file lookup) or
        the job's JSON form as a mapping - with exactly one recipe, which the check places on the system it checks
        (no C(force) or host requirements).
      - Compared with the job as it was last given.
      - Required when the check is created.
    type: raw
  every:
    description:
      - Check a system at most this long after its last check (V(24h), V(1d), V(PT12H)).
    type: str
  after_recipes:
    description:
      - Check a system after this many recipes ran on it.
    type: int
notes:
  - Whatever the cadence, a system is checked when it comes back from broken and after a failed installation.
seealso:
  - module: lablease.lab.system
  - module: lablease.lab.job
"""

EXAMPLES = r"""
- name: A daily smoke test of every x86_64 system, and after every 10 recipes
  lablease.lab.health_check:
    name: smoke-x86_64
    arch: x86_64
    job: "{{ lookup('ansible.builtin.file', 'smoke-job.xml') }}"
    every: 24h
    after_recipes: 10

- name: A check of the GPU pool, as JSON
  lablease.lab.health_check:
    name: gpu-burn
    pool: gpus
    job:
      recipe_sets:
        - recipes:
            - tasks:
                - name: /health/gpu-burn
    every: 12h

- name: Delete a check
  lablease.lab.health_check:
    name: gpu-burn
    state: absent
"""

RETURN = r"""
health_check:
  description: The health check after the task (in check mode, as it would be); null when it does not exist.
  returned: always
  type: dict
  contains:
    name:
      description: Its name.
      type: str
      sample: smoke-x86_64
    system:
      description: The system it checks, or null.
      type: str
    pool:
      description: The pool whose systems it checks, or null.
      type: str
    arch:
      description: The architecture whose systems it checks, or null.
      type: str
      sample: x86_64
    every:
      description: At most how long after a system's last check it checks again, in seconds; null for none.
      type: int
      sample: 86400
    after_recipes:
      description: After how many recipes it checks a system again; null for none.
      type: int
    job:
      description: The job it runs, normalised by the server.
      type: dict
    source:
      description: The job as it was given.
      type: raw
    owner:
      description: The administrator who defined it (its jobs run as them).
      type: str
    created_at:
      description: When it was defined.
      type: str
"""

from ansible_collections.lablease.lab.plugins.module_utils.module import options
from ansible_collections.lablease.lab.plugins.module_utils.resource import Resource
from ansible_collections.lablease.lab.plugins.module_utils.times import parse_duration

SCOPES = ("system", "pool", "arch")


class HealthCheck(Resource):
    key = "health_check"
    collection = "/health-checks"
    shown_keys = SCOPES + ("every", "after_recipes", "source")

    def validate(self):
        every = self.params["every"]
        try:  # the server answers seconds: compare in seconds
            self.every = None if every is None else int(parse_duration(every, "every"))
        except ValueError as error:
            self.module.fail_json(msg=str(error))
        if self.params["after_recipes"] is not None and self.params["after_recipes"] < 1:
            self.module.fail_json(msg="after_recipes: must be at least 1")

    def plan(self, current):
        params = self.params
        if current is None and params["job"] is None:
            self.module.fail_json(msg="job is required to create health check %s" % params["name"])
        if current is None and not any(params[key] for key in SCOPES):
            self.module.fail_json(msg="give one of system, pool or arch to create health check %s" % params["name"])
        wanted = {"job": params["job"], "every": self.every, "after_recipes": params["after_recipes"]}
        for key in SCOPES:
            wanted[key] = params[key].lower() if key == "system" and params[key] else params[key]
        changes = {}
        for key, value in wanted.items():
            if value is None:
                continue
            now = (current or {}).get("source" if key == "job" else key)
            if current is None or now != value:
                changes[key] = value
        if current is not None and any(key in changes for key in SCOPES):  # a new scope replaces the old one
            changes.update(dict((key, wanted[key]) for key in SCOPES if wanted[key]))
        return changes

    def predict(self, current, plan):
        before = current or {"name": self.params["name"], "system": None, "pool": None, "arch": None,
                             "every": None, "after_recipes": None, "job": None, "source": None, "owner": None}
        predicted = dict(before)
        if any(key in plan for key in SCOPES):
            predicted.update(dict((key, plan.get(key)) for key in SCOPES))
        for key in ("every", "after_recipes"):
            if key in plan:
                predicted[key] = plan[key]
        if "job" in plan:
            predicted["source"] = plan["job"]
        return predicted

    def create(self, plan):
        self.client.request("POST", self.collection, dict(plan, name=self.params["name"]))
        return None  # read back

    def update(self, current, plan):
        self.client.request("PATCH", self.path, plan)
        return None  # read back


def main():
    HealthCheck.main(options(
        "name", "state",
        system=dict(type="str"),
        pool=dict(type="str"),
        arch=dict(type="str"),
        job=dict(type="raw"),
        every=dict(type="str"),
        after_recipes=dict(type="int"),
    ), mutually_exclusive=[("system", "pool", "arch")])


if __name__ == "__main__":
    main()
