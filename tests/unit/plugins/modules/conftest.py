# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import sys

import pytest
import yaml
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
        undocumented(main, exited.value.result)
        return exited.value.result, exited.value.failed

    return runner


# What every module may return besides its RETURN: Ansible's common return values, and a failure's HTTP status and
# problem document (docs/ansible.md, "Errors").
COMMON = {"changed", "failed", "msg", "diff", "status", "problem", "skipped", "warnings", "deprecations", "invocation"}


def undocumented(main, result):
    """Every run of a module in these tests returns only what its RETURN documents: a task's result lands in
    logs, so nothing else (an installation's kickstart, a URL with a token) slips out of a module unnoticed."""
    documented = yaml.safe_load(sys.modules[main.__module__].RETURN) or {}
    extra = []

    def walk(value, doc, where):
        if isinstance(value, list):
            for item in value:
                walk(item, doc, where + "[]")
            return
        contains = (doc or {}).get("contains")
        if not isinstance(value, dict) or not contains:
            return
        for key, inner in value.items():
            if key not in contains:
                extra.append(where + "." + key)
            else:
                walk(inner, contains[key], where + "." + key)

    for key, value in result.items():
        if key in COMMON:
            continue
        if key not in documented:
            extra.append(key)
        else:
            walk(value, documented[key], key)
    assert not extra, "%s returns what its RETURN does not document: %s" % (main.__module__, ", ".join(extra))
