# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inventory plugin follows the server's pages (controller code: ansible-test runs it apart from modules)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible.inventory.data import InventoryData
from ansible_collections.lablease.lab.plugins.inventory.systems import InventoryModule
from ansible_collections.lablease.lab.plugins.module_utils import client as client_module
from ansible_collections.lablease.lab.tests.unit.plugins.fake_api import FakeApi

MANY = 250


@pytest.fixture
def api(monkeypatch):
    """The fake server behind the real client."""
    fake = FakeApi()
    monkeypatch.setattr(client_module, "open_url", fake)
    monkeypatch.setattr(client_module.time, "sleep", lambda seconds: None)
    return fake


def test_the_inventory_holds_every_page_of_systems(api):
    names = ["s%03d.lab.test" % n for n in range(MANY)]
    for name in names:
        api.add_system(name)
    plugin = InventoryModule()
    plugin.inventory = InventoryData()
    options = {"url": "http://lab.test:8042", "token": "secret", "validate_certs": True, "timeout": 30, "retries": 0,
               "systems": "all", "include_removed": False}
    plugin.get_option = options.get
    assert [s["fqdn"] for s in plugin.fetch()] == names
