# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # Every module's connection options (plugins/module_utils/client.py: API_ARGUMENT_SPEC), author,
    # requirements, shared notes, and the attributes every module has: what check_mode and diff_mode mean, and the
    # action group (meta/runtime.yml) all modules are in. A module adds its own check_mode and diff_mode support with
    # a variant of the attributes fragment (attributes.py: resource or info_module).
    DOCUMENTATION = r"""
options:
  url:
    description:
      - Base URL of the lablease server, for example V(http://127.0.0.1:8042).
      - A trailing V(/api/v1) is accepted and ignored.
      - If not set, the environment variable E(LABLEASE_URL) is used.
    type: str
  token:
    description:
      - "API token of the user the module acts as, sent as C(Authorization: Bearer TOKEN)."
      - If not set, the environment variable E(LABLEASE_TOKEN) is used.
      - An administrator creates tokens with C(lablease-server user add NAME) or C(lablease-server token create USER).
    type: str
  validate_certs:
    description:
      - Whether to verify the server's TLS certificate. Set to V(false) only for a test server with a self-signed certificate.
    type: bool
    default: true
  timeout:
    description:
      - Seconds to wait for each HTTP answer.
    type: int
    default: 30
  retries:
    description:
      - How many times to retry a call after a connection error or an HTTP 502, 503 or 504 answer,
        waiting 0.5 s, 1 s, 2 s, ... in between.
      - Only idempotent calls are retried (reads, returns, and reservations made with a O(lablease.lab.reservation#module:request_id)).
    type: int
    default: 3
attributes:
  check_mode:
    description: Can run in C(check_mode) and return changed status prediction without modifying target.
  diff_mode:
    description: Will return details on what has changed (or possibly needs changing in C(check_mode)), when in diff mode.
  action_group:
    description: Use C(group/lablease.lab.api) in C(module_defaults) to set the connection options.
    support: full
    membership:
      - lablease.lab.api
author:
  - lablease developers (@lablease)
requirements:
  - Python 3.8 or later on the host that runs the module (usually localhost).
notes:
  - >-
    All modules of this collection are in the action group C(lablease.lab.api), so
    C(module_defaults: {group/lablease.lab.api: {url: ..., token: ...}}) sets the connection once per play.
  - >-
    Errors of the server (C(application/problem+json)) become one message, for example
    C(s1.lab.test is reserved by alice until 2026-11-22T14:00Z).
"""

    # The same options for plugins (inventory), which also read ansible.cfg and the environment.
    PLUGIN = r"""
options:
  url:
    description:
      - Base URL of the lablease server, for example V(http://127.0.0.1:8042).
    type: str
    env:
      - name: LABLEASE_URL
  token:
    description:
      - API token of the user the plugin acts as.
    type: str
    env:
      - name: LABLEASE_TOKEN
  validate_certs:
    description:
      - Whether to verify the server's TLS certificate.
    type: bool
    default: true
  timeout:
    description:
      - Seconds to wait for each HTTP answer.
    type: int
    default: 30
  retries:
    description:
      - How many times to retry a read after a connection error or an HTTP 502, 503 or 504 answer.
    type: int
    default: 3
"""
