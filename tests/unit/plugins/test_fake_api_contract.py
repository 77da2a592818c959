# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fake API answers only as the server's OpenAPI description says it may (openapi_check.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest
from ansible_collections.lablease.lab.plugins.module_utils.client import Client, LableaseError
from ansible_collections.lablease.lab.tests.unit.plugins.fake_api import FakeApi


def client(fake):
    return Client("http://lab.test:8042", "secret", retries=0, opener=fake)


def test_an_answer_with_a_field_the_server_does_not_have_fails():
    fake = FakeApi()
    fake.add_system("s1.lab.test", rack="r12")
    with pytest.raises(AssertionError) as error:
        client(fake).get("/systems/s1.lab.test")
    assert "GET /api/v1/systems/{fqdn}" in str(error.value) and "'rack' was unexpected" in str(error.value)


def test_an_answer_of_the_wrong_type_fails():
    fake = FakeApi()
    fake.add_system("s1.lab.test", condition="lent")
    with pytest.raises(AssertionError) as error:
        client(fake).get("/systems/s1.lab.test")
    assert "condition: 'lent' is not one of" in str(error.value)


def test_a_status_the_server_never_answers_fails():
    fake = FakeApi()
    fake.route = lambda url, method, path, query, body: fake.problem(url, 410, "Gone", "no more")
    with pytest.raises(AssertionError) as error:
        client(fake).get("/systems/s1.lab.test")
    assert "the description has no 410 answer" in str(error.value)


def test_a_request_the_server_would_refuse_fails_before_the_fake_answers():
    fake = FakeApi()
    with pytest.raises(AssertionError) as error:
        client(fake).request("POST", "/reservations", {"system": "s1.lab.test", "hours": 4})
    assert "the server would refuse the body" in str(error.value) and "'hours' was unexpected" in str(error.value)
    with pytest.raises(AssertionError) as error:
        client(fake).get("/systems", {"colour": "red"})
    assert "takes no query parameter colour" in str(error.value)
    with pytest.raises(AssertionError) as error:
        client(fake).get("/lamps")
    assert "the server has no route GET /api/v1/lamps" in str(error.value)
    assert fake.reservations == []  # the fake never answered


def test_problem_documents_are_checked_too():
    fake = FakeApi()
    with pytest.raises(LableaseError) as error:  # a 404 the server answers, in its problem shape
        client(fake).get("/systems/nope.lab.test")
    assert error.value.status == 404 and error.value.problem["detail"] == "no system named nope.lab.test"
