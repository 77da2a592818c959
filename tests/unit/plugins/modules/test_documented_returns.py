# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A module returns what its RETURN documents, and nothing else: a task's result lands in logs.

Every module run in these tests is checked against its RETURN (conftest.py `undocumented`); here each
module's documented object is checked against the fields the server's answer has (openapi.json, the server's
own description), so a field the server adds is either documented or dropped by the module on purpose.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib
import json

import pytest
import yaml

from ansible_collections.lablease.lab.tests.unit.plugins.openapi_check import COPY

# module: (the key of its result, the route whose answer it returns, the fields it drops on purpose and why)
RETURNS = {
    "system": ("system", "/api/v1/systems/{fqdn}", {}),
    "loan": ("loan", "/api/v1/systems/{fqdn}/loan", {}),
    "health_check": ("health_check", "/api/v1/health-checks/{name}", {}),
    "recipe": ("recipe", "/api/v1/recipes/{id}", {}),
    "reservation": ("reservation", "/api/v1/reservations/{id}", {}),
    "pool": ("pool", "/api/v1/pools/{name}", {}),
    "distro_tree": ("distro_tree", "/api/v1/distro-trees/{id}", {}),
    "power": ("command", "/api/v1/commands/{id}", {}),
    "group": ("group", "/api/v1/groups/{name}", {}),
    "access_policy": ("policy", "/api/v1/systems/{fqdn}/access-policy", {}),
    "advance_reservation": ("advance_reservation", "/api/v1/advance-reservations/{ident}",
                            {"explain": "only with ?explain=true, which the module does not ask"}),
    "provision": ("installation", "/api/v1/installations/{id}",
                  {"kickstart": "the rendered kickstart, which can carry passwords and keys",
                   "kickstart_url": "carries the installation's secret token"}),
}


def answer_fields(path):
    with open(COPY) as handle:
        description = json.load(handle)
    content = description["paths"][path]["get"]["responses"]["200"]["content"]
    return set(next(iter(content.values()))["schema"]["properties"])


@pytest.mark.parametrize("name", sorted(RETURNS))
def test_every_field_of_the_answer_is_documented_or_dropped_on_purpose(name):
    key, path, dropped = RETURNS[name]
    module = importlib.import_module("ansible_collections.lablease.lab.plugins.modules." + name)
    documented = set(yaml.safe_load(module.RETURN)[key]["contains"])
    assert answer_fields(path) - documented == set(dropped), name
    assert not documented & set(dropped), name
