# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # Every module: what the attributes mean, and the action group (meta/runtime.yml) all modules are in.
    # A module then says its own check_mode and diff_mode support (or takes a variant below), adding
    # `details` where it does something particular.
    DOCUMENTATION = r"""
options: {}
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
"""

    # A module that changes things, with full check and diff mode; use together with the standard fragment.
    # A module overrides `details` where its check or diff mode says more (what it predicts, what the diff shows).
    RESOURCE = r"""
options: {}
attributes:
  check_mode:
    support: full
    details:
      - Nothing is written. The server is asked what would happen (its V(validate_only) form of the same
        requests) - the task fails where the real run would, and otherwise shows the object as it would be.
  diff_mode:
    support: full
    details:
      - Shows the fields the module manages before and after.
"""

    # A module that only reads (*_info); use together with the standard fragment.
    INFO_MODULE = r"""
options: {}
attributes:
  check_mode:
    support: full
    details:
      - This action does not modify state.
  diff_mode:
    support: N/A
    details:
      - This action does not modify state.
"""
