# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from ansible_collections.lablease.lab.plugins.module_utils import client as client_module
from ansible_collections.lablease.lab.tests.unit.plugins.fake_api import FakeApi


class Exited(Exception):
    def __init__(self, result, failed):
        super(Exited, self).__init__(result.get("msg"))
        self.result = result
        self.failed = failed


@pytest.fixture
def api(monkeypatch):
    """The fake server behind the real client."""
    fake = FakeApi()
    monkeypatch.setattr(client_module, "open_url", fake)
    monkeypatch.setattr(client_module.time, "sleep", lambda seconds: None)
    return fake


@pytest.fixture
def run(monkeypatch):
    """run(module.main, args, check=False) -> (result, failed)."""

    def exit_json(self, **result):
        raise Exited(result, False)

    def fail_json(self, **result):
        raise Exited(result, True)

    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)

    def runner(main, args, check=False, diff=False):
        args = dict({"url": "http://lab.test:8042", "token": "secret"}, **args)
        if check:
            args["_ansible_check_mode"] = True
        if diff:
            args["_ansible_diff"] = True
        with patch_module_args(args):
            with pytest.raises(Exited) as exited:
                main()
        return exited.value.result, exited.value.failed

    return runner
