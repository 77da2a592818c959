#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: power
short_description: Power a lab system on or off, or reboot it, through the lablease server
version_added: 1.0.0
description:
  - Queues a power command for O(system) on the lablease server, which runs it with the system's power
    driver (retrying it), and with O(wait) waits until the command has completed.
  - Needs the C(control_system) permission on the system, or being its current holder.
  - B(Idempotency.) V(on) and V(off) do nothing (not changed) when the system's last known power state - from
    its last completed power command - already is the one asked for, unless O(force=true). V(reboot) always
    queues a command (changed).
extends_documentation_fragment:
  - lablease.lab.api
  - lablease.lab.attributes.resource
  - lablease.lab.options.system
attributes:
  check_mode:
    details: No command is queued. The server is asked whether it would queue one (V(validate_only)), so the task
      fails where the real run would (no power driver, not allowed to control the system).
  diff_mode:
    details: Shows the system's known power state before and after.
options:
  state:
    description:
      - V(on) or V(off) - the power state wanted; V(reboot) - power-cycle the system.
      - 'Quote V(on) and V(off) in YAML, for example C(state: "off"); unquoted, YAML reads them as booleans.'
    type: str
    required: true
    choices: ["on", "off", reboot]
  force:
    description:
      - Queue the command even when the known power state already is O(state) (the known state may be stale
        when somebody pressed the button).
    type: bool
    default: false
  wait:
    description:
      - Wait until the command has completed. A command that fails (after the server's retries) fails the task
        with its error.
    type: bool
    default: true
  wait_timeout:
    description:
      - Seconds to wait with O(wait). On timeout the task fails, saying the command's last status (the command
        stays queued on the server).
    type: int
    default: 300
  poll_interval:
    description:
      - Seconds between two looks at the command while waiting.
    type: int
    default: 2
    aliases: [wait_sleep]
seealso:
  - module: lablease.lab.provision
  - module: lablease.lab.system
"""

EXAMPLES = r"""
- name: Make sure s1.lab.test is off
  lablease.lab.power:
    system: s1.lab.test
    state: "off"

- name: Power it on even if the server believes it is on
  lablease.lab.power:
    system: s1.lab.test
    state: "on"
    force: true

- name: Reboot it and wait at most two minutes for the power driver
  lablease.lab.power:
    system: s1.lab.test
    state: reboot
    wait_timeout: 120
  register: rebooted
"""

RETURN = r"""
command:
  description: The power command queued by the task (after O(wait), as it ended); null when nothing was done
    (already in that state, or check mode).
  returned: always
  type: dict
  contains:
    id:
      description: The command's id.
      type: int
      sample: 31
    system:
      description: The system.
      type: str
      sample: s1.lab.test
    action:
      description: V(on), V(off) or V(reboot).
      type: str
      sample: reboot
    status:
      description: V(queued), V(running), V(completed) or V(failed).
      type: str
      sample: completed
    attempts:
      description: How many times the server ran the power driver for it.
      type: int
      sample: 1
    user:
      description: Who asked for it.
      type: str
    installation:
      description: The installation it belongs to, or null.
      type: int
    error:
      description: Why it failed, or null.
      type: str
    created_at:
      description: When it was queued.
      type: str
    started_at:
      description: When the server first ran it.
      type: str
    finished_at:
      description: When it completed or failed.
      type: str
    waiting_on:
      description:
        - Why a queued or running command does not run yet - its lab's agent is silent or never came.
        - Null for a finished command, a lab the server's worker serves, or while the lab's agent is online.
      type: str
power_state:
  description:
    - The system's power state as the server knows it after the task - V(on), V(off) or V(unknown).
    - Without O(wait), the state before the queued command runs; in check mode, the state the command would give.
  returned: always
  type: str
  sample: "on"
"""

from ansible_collections.lablease.lab.plugins.module_utils.client import LableaseError, wait_until
from ansible_collections.lablease.lab.plugins.module_utils.module import (
    check_waits,
    lablease_module,
    options,
    run,
    wait_options,
)

ENDED = ("completed", "failed")


def wait_for(module, client, command):
    """Poll until the command completed; fail when it failed or on timeout."""
    params = module.params
    path = "/commands/%d" % command["id"]
    state = {"command": command}

    def check():
        state["command"] = current = client.get(path)
        return current if current.get("status") in ENDED else None

    done, timed_out = wait_until(check, params["wait_timeout"], params["poll_interval"])
    current = state["command"]
    where = "%s: power %s (command %d)" % (current.get("system") or params["system"], current.get("action"), current["id"])
    if timed_out:
        module.fail_json(msg="%s is still %s after waiting %d s" % (where, current.get("status"), params["wait_timeout"]),
                         changed=True, command=current, power_state=None)
    if current.get("status") == "failed":
        module.fail_json(msg="%s failed after %s attempt(s): %s" % (
            where, current.get("attempts"), current.get("error") or "no error given"),
            changed=True, command=current, power_state=None)
    return current


def switch(module, client):
    """Queue the power command unless the known power state already is the one asked for; with wait, wait for it."""
    params = module.params
    path = "/systems/%s" % client.quote(params["system"].strip().lower())
    known = client.get(path).get("power_state") or "unknown"
    wanted = "off" if params["state"] == "off" else "on"
    if params["state"] != "reboot" and known == params["state"] and not params["force"]:
        module.exit_json(changed=False, command=None, power_state=known,
                         diff={"before": {"power_state": known}, "after": {"power_state": known}})
    diff = {"before": {"power_state": known}, "after": {"power_state": wanted}}
    # check mode: the server only validates it (no driver, not allowed ... fail the task as they would)
    command = client.request("POST", path + "/power", {"action": params["state"]})[1]
    if module.check_mode:
        module.exit_json(changed=True, command=None, power_state=wanted, diff=diff)
    power_state = known
    if params["wait"]:
        try:
            command = wait_for(module, client, command)
            power_state = client.get(path).get("power_state") or "unknown"
        except LableaseError as error:
            module.fail_json(msg=error.message, status=error.status, changed=True, command=command, power_state=None)
    diff["after"] = {"power_state": power_state if params["wait"] else wanted}
    module.exit_json(changed=True, command=command, power_state=power_state, diff=diff)


def main():
    module = lablease_module(options(
        "system", "force",
        state=dict(type="str", required=True, choices=["on", "off", "reboot"]),
        **wait_options(timeout=300, interval=2)
    ))
    check_waits(module)
    run(module, switch)


if __name__ == "__main__":
    main()
