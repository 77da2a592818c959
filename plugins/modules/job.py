#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: job
short_description: Submit a job to the lablease scheduler, wait for its systems, or cancel it
version_added: 1.0.0
description:
  - Submits a job - job XML from a file or a string, or its JSON form written as YAML - and optionally waits
    until every recipe is running, returning the systems the scheduler assigned.
  - Re-attaches to an earlier job with O(job_id) (to wait for it or read its systems) and cancels a job with
    O(state=absent).
  - B(Idempotency.) Every submission carries a O(request_id) (by default derived from the job's content).
    While a job submitted with that id is unfinished, running the task again re-attaches to it and reports
    no change; once it has finished, the same task submits the work again. With O(job_id) the module never
    submits.
  - See the server's C(docs/jobs.md) for the job XML and the JSON form.
extends_documentation_fragment:
  - lablease.lab.api
attributes:
  check_mode:
    support: full
    details:
      - Nothing is submitted or cancelled. The server checks the job in full without keeping it
        (V(validate_only)), so malformed XML, an unknown pool or distro fails the task as the real run would.
        The task reports C(changed) unless an unfinished job with the same O(request_id) exists (then it
        returns that job); a job that would be submitted is not made, so RV(job_id) and RV(job) are null and
        RV(recipes) and RV(systems) empty.
  diff_mode:
    support: none
    details: A job is submitted or cancelled as a whole; there is nothing to compare.
options:
  state:
    description:
      - V(present) submits the job (or, with O(job_id), re-attaches to it); V(absent) cancels the job O(job_id)
        (every unfinished recipe; not changed when the job has already finished).
    type: str
    choices: [present, absent]
    default: present
  request_id:
    description:
      - Identifies this submission. While a job submitted with the same id is unfinished, the server returns
        it instead of queueing the work again; after it has finished, the id submits new work.
      - Defaults to an id derived from the job's content (the XML, or O(recipe_sets) with O(whiteboard) and
        O(group)), so re-running a play re-attaches to its own running job. Set it to submit the same
        content twice at once (give each a different id).
    type: str
  job_id:
    description:
      - An existing job. With O(state=present) the module reads it (and waits when asked) instead of submitting;
        with O(state=absent) it is the job to cancel.
    type: int
    aliases: [id]
  xml_file:
    description:
      - A job XML file on the host that runs the module (usually the controller, for C(localhost)).
    type: path
  xml:
    description:
      - Job XML as a string.
    type: str
  recipe_sets:
    description:
      - >-
        The job's recipe sets in the JSON form, for example
        V([{recipes: [{host_requires: {field: arch, op: =, value: x86_64}}]}]).
      - Each recipe set holds C(recipes) (and optionally C(priority), C(ar)); each recipe may have
        C(host_requires), C(force), C(distro_requires), C(autopick), C(reservesys), C(runtime_limit),
        C(whiteboard), C(ks_meta), C(kernel_options), C(kernel_options_post), C(packages), C(repos),
        C(partitions), C(ks_appends), C(kickstart), C(watchdog), C(role), C(distro) and C(tasks)
        (see the server's docs/jobs.md); parts the server keeps without acting on them are listed in
        the returned job's C(warnings).
    type: list
    elements: dict
  whiteboard:
    description:
      - The job's whiteboard (with O(recipe_sets)).
    type: str
  group:
    description:
      - A group the job also belongs to; its members may see and cancel it (with O(recipe_sets)).
    type: str
  wait:
    description:
      - Wait until every recipe is running (a completed recipe counts too). A recipe that is aborted or
        cancelled fails the task.
    type: bool
    default: false
  wait_timeout:
    description:
      - Seconds to wait with O(wait). On timeout the task fails, saying why the waiting recipes wait
        (the job keeps waiting on the server; cancel it with O(state=absent) if you do not want it any more).
    type: int
    default: 600
  wait_sleep:
    description:
      - Seconds between two looks at the job while waiting.
    type: int
    default: 2
seealso:
  - module: lablease.lab.recipe
"""

EXAMPLES = r"""
- name: Ask for one x86_64 system, preferring pool gpus, and wait until it is ours
  lablease.lab.job:
    whiteboard: smoke test
    recipe_sets:
      - recipes:
          - host_requires: {field: arch, op: "=", value: x86_64}
            autopick: {pools: [gpus]}
            runtime_limit: 2h
    wait: true
    wait_timeout: 300
  register: smoke_job

- name: Put the system into the inventory
  ansible.builtin.add_host:
    name: "{{ item }}"
    groups: smoke
  loop: "{{ smoke_job.systems }}"

- name: Later in the play - read the same job again (never submits)
  lablease.lab.job:
    job_id: "{{ smoke_job.job_id }}"

- name: Cancel it
  lablease.lab.job:
    job_id: "{{ smoke_job.job_id }}"
    state: absent

- name: Submit job XML from a string
  lablease.lab.job:
    xml: |
      <job>
        <whiteboard>two systems</whiteboard>
        <recipeSet>
          <recipe><hostRequires><arch op="=" value="x86_64"/></hostRequires></recipe>
          <recipe><hostRequires><arch op="=" value="x86_64"/></hostRequires></recipe>
        </recipeSet>
      </job>
  register: xml_job

- name: Cancel that one too
  lablease.lab.job:
    job_id: "{{ xml_job.job_id }}"
    state: absent
"""

RETURN = r"""
job_id:
  description: The job's id (null in check mode for a job that would be submitted).
  returned: always
  type: int
  sample: 42
job:
  description: The job as the server shows it (C(id), C(owner), C(whiteboard), C(status), C(result), C(recipe_sets)
    with their recipes, C(warnings)); null in check mode for a job that would be submitted.
  returned: always
  type: dict
recipes:
  description:
    - Every recipe of the job, in order, each with C(id), C(status), C(result), C(system), C(whiteboard);
      after O(wait) also C(reservation) (the id of the reservation that holds the system) and C(tasks).
  returned: always
  type: list
  elements: dict
systems:
  description: The systems assigned to the job's recipes so far, in recipe order - a list to loop over with
    C(ansible.builtin.add_host).
  returned: always
  type: list
  elements: str
  sample: [s1.lab.test]
"""

import hashlib
import json
import os

from ansible.module_utils.common.text.converters import to_bytes
from ansible_collections.lablease.lab.plugins.module_utils.client import LableaseError, wait_until
from ansible_collections.lablease.lab.plugins.module_utils.module import lablease_module, options, run

FINISHED = ("completed", "cancelled", "aborted")
BAD = ("cancelled", "aborted")
READY = ("running", "completed")


def recipes_of(job):
    return [recipe for recipe_set in (job or {}).get("recipe_sets") or [] for recipe in recipe_set.get("recipes") or []]


def systems_of(recipes):
    return [r["system"] for r in recipes if r.get("system")]


def finished(job):
    recipes = recipes_of(job)
    return bool(recipes) and all(r.get("status") in FINISHED for r in recipes)


def job_document(module):
    """(json body or None, xml text or None); fails the module when the description cannot be a job."""
    params = module.params
    if params["xml_file"] is not None:
        if not os.path.isfile(params["xml_file"]):
            module.fail_json(msg="xml_file: %s is not a file" % params["xml_file"])
        with open(params["xml_file"], "rb") as handle:
            text = handle.read()
        if b"<job" not in text:
            module.fail_json(msg="xml_file: %s has no <job> element" % params["xml_file"])
        return None, text
    if params["xml"] is not None:
        if "<job" not in params["xml"]:
            module.fail_json(msg="xml: no <job> element")
        return None, to_bytes(params["xml"])
    sets = params["recipe_sets"]
    if not sets:
        module.fail_json(msg="recipe_sets: give at least one recipe set")
    for index, recipe_set in enumerate(sets):
        if not isinstance(recipe_set.get("recipes"), list) or not recipe_set["recipes"]:
            module.fail_json(msg="recipe_sets[%d].recipes: give at least one recipe" % index)
    body = {"recipe_sets": sets}
    if params["whiteboard"] is not None:
        body["whiteboard"] = params["whiteboard"]
    if params["group"] is not None:
        body["group"] = params["group"]
    return body, None


def derived_request_id(body, xml):
    """The same job content gives the same id, so a re-run finds the job it submitted."""
    content = xml if xml is not None else to_bytes(json.dumps(body, sort_keys=True))
    return "ansible-job-" + hashlib.sha256(content).hexdigest()[:32]


def wait_for(module, client, job, changed):
    """Poll until every recipe runs; fail on an aborted/cancelled recipe or on timeout."""
    params = module.params
    path = "/jobs/%d" % job["id"]
    state = {"job": job}

    def check():
        state["job"] = current = client.get(path)
        recipes = recipes_of(current)
        if any(r.get("status") in BAD for r in recipes):
            return current
        if recipes and all(r.get("status") in READY for r in recipes):
            return current
        return None

    done, timed_out = wait_until(check, params["wait_timeout"], params["wait_sleep"])
    job = state["job"]
    recipes = recipes_of(job)
    bad = [r for r in recipes if r.get("status") in BAD]
    if bad or timed_out:
        details = [client.get("/recipes/%d" % r["id"]) for r in recipes if r.get("status") not in READY]
        if bad:
            message = "job %d: %s" % (job["id"], "; ".join(
                "recipe %d was %s" % (r["id"], r["status"]) for r in bad))
        else:
            message = "job %d: not running after %d s: %s" % (job["id"], params["wait_timeout"], "; ".join(
                "recipe %d is %s (%s)" % (r["id"], r["status"], (r.get("why") or {}).get("message") or "no reason given")
                for r in details))
        module.fail_json(msg=message, changed=changed, job_id=job["id"], job=job,
                         recipes=details or recipes, systems=systems_of(recipes))
    return job, [client.get("/recipes/%d" % r["id"]) for r in recipes]


def answer(module, changed, job, recipes):
    module.exit_json(changed=changed, job_id=job["id"] if job else None, job=job, recipes=recipes,
                     systems=systems_of(recipes))


def cancel(module, client):
    """state=absent: cancel the job unless every recipe has finished."""
    job = client.get("/jobs/%d" % module.params["job_id"])
    if finished(job):
        answer(module, False, job, recipes_of(job))
    job = client.request("POST", "/jobs/%d/cancel" % module.params["job_id"])[1]  # check mode: only validated
    answer(module, True, job, recipes_of(job))


def submit(module, client, body, xml):
    """(job, changed): the job with the request id, submitted unless it exists (201 new, 200 found)."""
    query = {"request_id": module.params["request_id"] or derived_request_id(body, xml)}
    # In check mode the server checks the job in full and keeps nothing (validate_only): a job it would refuse
    # fails the task; an unfinished job with the request id is found (200) as it would be.
    if xml is not None:
        status, job = client.request("POST", "/jobs", query=query, idempotent=True, raw=xml, content_type="application/xml")
    else:
        status, job = client.request("POST", "/jobs", body, query=query, idempotent=True)
    if module.check_mode and status == 201:
        answer(module, True, None, [])  # nothing was submitted: no job, recipe or system to name
    return job, status == 201


def run_job(module, client, body, xml):
    """Cancel the job (state=absent), or submit it (or take job_id's) and, with wait, wait until it runs."""
    params = module.params
    if params["state"] == "absent":
        cancel(module, client)
    if params["job_id"] is not None:
        job, changed = client.get("/jobs/%d" % params["job_id"]), False
    else:
        job, changed = submit(module, client, body, xml)
    recipes = recipes_of(job)
    if params["wait"] and not module.check_mode:
        try:
            job, recipes = wait_for(module, client, job, changed)
        except LableaseError as error:
            module.fail_json(msg=error.message, status=error.status, changed=changed, job_id=job["id"], job=job)
    answer(module, changed, job, recipes)


def main():
    module = lablease_module(
        options(
            "state",
            job_id=dict(type="int", aliases=["id"]),
            request_id=dict(type="str"),
            xml_file=dict(type="path"),
            xml=dict(type="str"),
            recipe_sets=dict(type="list", elements="dict"),
            whiteboard=dict(type="str"),
            group=dict(type="str"),
            wait=dict(type="bool", default=False),
            wait_timeout=dict(type="int", default=600),
            wait_sleep=dict(type="int", default=2),
        ),
        mutually_exclusive=[("xml_file", "xml", "recipe_sets", "job_id"), ("xml_file", "xml", "whiteboard"),
                            ("xml_file", "xml", "group")],
        required_if=[("state", "present", ("xml_file", "xml", "recipe_sets", "job_id"), True),
                     ("state", "absent", ("job_id",))],
    )
    params = module.params
    body, xml = job_document(module) if params["state"] == "present" and params["job_id"] is None else (None, None)
    run(module, run_job, body, xml)


if __name__ == "__main__":
    main()
