# -*- coding: utf-8 -*-
# Copyright: lablease contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):

    # Options that several modules take and document alike (plugins/module_utils/module.py: SHARED), one variant
    # an option; a module that says more about one documents it itself.

    # The system a module acts on, by its fqdn (access_policy, loan, power).
    SYSTEM = r"""
options:
  system:
    description:
      - Fully qualified name of the system.
    type: str
    required: true
    aliases: [fqdn]
"""
