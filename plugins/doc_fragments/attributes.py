# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # What the attributes mean and the action group are in lablease.lab.api now, which every module extends; this
    # fragment's variants below say a module's check_mode and diff_mode support, and the module adds `details` where
    # it does something particular. The plain fragment is kept, empty, so that a list naming it (as 1.0.0's modules
    # did) still resolves.
    DOCUMENTATION = r"""
options: {}
"""

    # A module that changes things, with full check and diff mode; use together with lablease.lab.api.
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

    # A module that only reads (*_info); use together with lablease.lab.api.
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
