# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the modules' main() share.

- ``lablease_module(argument_spec, **constraints)``: a module's AnsibleModule - the connection options
  (client.py) and its own, with check mode (every module supports it);
- ``options(*shared, **own)``: a module's own options - those several modules take alike, by name (SHARED), and
  its particular ones; ``wait_options()`` and ``check_waits()``: waiting for what a task started (power, provision);
- ``run(module, step, *args)``: ``step(module, client, *args)`` with the module's client, a LableaseError failing
  the task (``fail``); ``run_info(module, key, find)``: the same for an *_info module, which answers what
  ``find(module, client)`` lists and never changes anything.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.lablease.lab.plugins.module_utils.client import (
    LableaseError,
    api_argument_spec,
    module_client,
)

# Options that several modules take alike. The system option is documented once as well
# (doc_fragments/options.py); the others are documented by each module, in its own words.
SHARED = {
    "name": dict(type="str", required=True),
    "state": dict(type="str", default="present", choices=["present", "absent"]),
    "system": dict(type="str", required=True, aliases=["fqdn"]),
    "force": dict(type="bool", default=False),
}
LIST_MODES = ["exact", "add", "remove"]  # how a list option is applied (client.list_plan)


def options(*shared, **own):
    """A module's argument spec (without the connection options): the SHARED options named, and its own."""
    spec = dict((name, copy.deepcopy(SHARED[name])) for name in shared)
    spec.update(own)
    return spec


def list_mode():
    """The option saying how a list option is applied: exact (the default), add or remove."""
    return dict(type="str", default="exact", choices=list(LIST_MODES))


def wait_options(timeout, interval):
    """wait (default true), wait_timeout and poll_interval (alias wait_sleep), with a module's defaults in seconds."""
    return dict(wait=dict(type="bool", default=True), wait_timeout=dict(type="int", default=timeout),
                poll_interval=dict(type="int", default=interval, aliases=["wait_sleep"]))


def check_waits(module):
    """Fail the module when wait_timeout or poll_interval is negative."""
    for key in ("wait_timeout", "poll_interval"):
        if module.params[key] < 0:
            module.fail_json(msg="%s: must be 0 or more, not %d" % (key, module.params[key]))


def lablease_module(argument_spec, **constraints):
    """The AnsibleModule of a lablease module: the connection options and argument_spec, check mode supported;
    constraints are AnsibleModule's (mutually_exclusive, required_if, ...)."""
    return AnsibleModule(argument_spec=api_argument_spec(**argument_spec), supports_check_mode=True, **constraints)


def fail(module, error, **result):
    """Fail the module with a LableaseError's message, HTTP status and problem document."""
    module.fail_json(msg=error.message, status=error.status, problem=error.problem, **result)


def run(module, step, *args):
    """step(module, client, *args) with the module's client; a LableaseError fails the task (fail)."""
    client = module_client(module)
    try:
        step(module, client, *args)
    except LableaseError as error:
        fail(module, error)


def run_info(module, key, find):
    """An *_info module: exit, not changed, with what find(module, client) lists under key; a LableaseError fails
    the task with its message and HTTP status."""
    client = module_client(module)
    try:
        found = find(module, client)
    except LableaseError as error:
        module.fail_json(msg=error.message, status=error.status)
    module.exit_json(changed=False, **{key: found})
