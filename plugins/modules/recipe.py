#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: recipe
short_description: Report task results of a running recipe, and finish it
version_added: 1.0.0
description:
  - Reports task results of a recipe (one system of a job) and finishes it - C(completed) with a result, or
    C(aborted) - which returns the system (or keeps it for the job's owner when the recipe's C(reservesys) says so).
  - Only the job's owner (and administrators) may report on its recipes.
  - Idempotent. The recipe is read first; a task result already reported (same name and result) is not sent
    again, and finishing a recipe that has already finished changes nothing.
extends_documentation_fragment:
  - lablease.lab.api
  - lablease.lab.attributes.resource
attributes:
  diff_mode:
    details: Shows the recipe's status, result and task results before and after.
options:
  recipe_id:
    description:
      - The recipe (the C(recipes[].id) returned by M(lablease.lab.job)).
    type: int
    required: true
    aliases: [id]
  tasks:
    description:
      - Task results to report.
    type: list
    elements: dict
    suboptions:
      name:
        description:
          - The task's name.
        type: str
        required: true
      result:
        description:
          - Its result.
        type: str
        required: true
        choices: [pass, warn, fail]
      comment:
        description:
          - A message about the result (up to 4000 characters), sent as the task result's C(message).
        type: str
  status:
    description:
      - V(completed) finishes a running recipe with O(result) (the worst of it and the task results);
        V(aborted) ends it whatever its state. Not given - the recipe is not finished.
    type: str
    choices: [completed, aborted]
  result:
    description:
      - The recipe's result with O(status=completed) (ignored with V(aborted)). Not given - the worst of the
        reported task results.
    type: str
    choices: [pass, warn, fail]
seealso:
  - module: lablease.lab.job
"""

EXAMPLES = r"""
- name: Get a system for a test
  lablease.lab.job:
    recipe_sets:
      - recipes:
          - host_requires: {field: arch, op: "=", value: x86_64}
            runtime_limit: 1h
    wait: true
  register: test_job

- name: Report a task result
  lablease.lab.recipe:
    recipe_id: "{{ test_job.recipes[0].id }}"
    tasks:
      - {name: /kernel/smoke, result: pass}

- name: Finish the recipe, which returns the system
  lablease.lab.recipe:
    recipe_id: "{{ test_job.recipes[0].id }}"
    status: completed
    result: pass
"""

RETURN = r"""
recipe:
  description: The recipe after the task (in check mode, as it would be).
  returned: always
  type: dict
  contains:
    id:
      description: Its id.
      type: int
    status:
      description: C(queued), C(assigned), C(scheduled), C(waiting), C(installing), C(running), C(completed),
        C(cancelled) or C(aborted).
      type: str
      sample: completed
    result:
      description: C(none), C(pass), C(warn) or C(fail).
      type: str
      sample: pass
    system:
      description: The system it ran on.
      type: str
    job:
      description: Its job's id.
      type: int
    reservation:
      description: The reservation that held the system.
      type: int
    tasks:
      description: The task results reported so far.
      type: list
      elements: dict
    whiteboard:
      description: Its whiteboard.
      type: str
    why:
      description: While it waits - why (the scheduler's explanation and its reason in words).
      type: dict
    recipe_set:
      description: Its recipe set's id.
      type: int
    spec:
      description: What it asks for (host and distro requirements, tasks...), as the server normalised it.
      type: dict
    distro_tree:
      description: The id of the distro tree installed, or null.
      type: int
    installation:
      description: Its installation, once it has one.
      type: dict
    started_at:
      description: When it started, or null.
      type: str
    finished_at:
      description: When it finished, or null.
      type: str
    watchdog:
      description: When its watchdog (runtime limit) aborts it, or null.
      type: str
    host:
      description: For a guest recipe - its host recipe's id.
      type: int
    guests:
      description: A host recipe's guest recipes.
      type: list
      elements: dict
    guestname:
      description: A guest recipe's virtual machine name, or null.
      type: str
    guestargs:
      description: A guest recipe's arguments.
      type: str
    mac:
      description: A guest recipe's MAC address, or null.
      type: str
    address:
      description: A guest recipe's address, or null.
      type: str
"""

from ansible_collections.lablease.lab.plugins.module_utils.module import options
from ansible_collections.lablease.lab.plugins.module_utils.resource import Resource

FINISHED = ("completed", "cancelled", "aborted")
ORDER = ["none", "pass", "warn", "fail"]


def worst(results):
    return max(results, key=lambda r: ORDER.index(r) if r in ORDER else 0)


def shown(recipe):
    return {"status": recipe.get("status"), "result": recipe.get("result"),
            "tasks": ["%s: %s" % (t.get("name"), t.get("result")) for t in recipe.get("tasks") or []]}


class Recipe(Resource):
    key = "recipe"
    absent_state = None  # a recipe is not created nor deleted here: only reported on and finished

    def read(self):
        self.path = "/recipes/%d" % self.params["recipe_id"]
        return self.client.get(self.path)

    def plan(self, current):
        params = self.params
        done = current.get("status") in FINISHED
        reported = [(t.get("name"), t.get("result")) for t in current.get("tasks") or []]
        tasks = []
        for task in [] if done else params["tasks"] or []:
            if (task["name"], task["result"]) not in reported:
                sent = {"name": task["name"], "result": task["result"]}
                if task.get("comment") is not None:
                    sent["message"] = task["comment"]
                tasks.append(sent)
        change = {"tasks": tasks} if tasks else {}
        if params["status"] and not done:
            if params["status"] == "completed" and current.get("status") != "running":
                self.module.fail_json(msg="recipe %d is %s: only a running recipe can complete (use status: aborted "
                                          "to end it anyway)" % (params["recipe_id"], current.get("status")), recipe=current)
            change["status"] = params["status"]
            if params["status"] == "completed" and params["result"]:
                change["result"] = params["result"]
        return change

    def predict(self, current, plan):
        tasks = plan.get("tasks", [])
        predicted = dict(current, tasks=list(current.get("tasks") or []) + tasks)
        results = [current.get("result") or "none"] + [t["result"] for t in tasks]
        if plan.get("status") == "completed":
            results.append(plan.get("result") or "none")
        predicted["result"] = worst(results)
        if "status" in plan:
            predicted["status"] = plan["status"]
        return predicted

    shown = staticmethod(shown)


def main():
    Recipe.main(options(
        recipe_id=dict(type="int", required=True, aliases=["id"]),
        tasks=dict(type="list", elements="dict", options=dict(
            name=dict(type="str", required=True),
            result=dict(type="str", required=True, choices=["pass", "warn", "fail"]),
            comment=dict(type="str"),
        )),
        status=dict(type="str", choices=["completed", "aborted"]),
        result=dict(type="str", choices=["pass", "warn", "fail"]),
    ), required_by={"result": "status"})


if __name__ == "__main__":
    main()
