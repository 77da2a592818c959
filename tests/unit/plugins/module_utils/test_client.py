# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from urllib.error import URLError

import pytest
from ansible_collections.lablease.lab.plugins.module_utils.client import (
    Client,
    LableaseError,
    problem_message,
)
from ansible_collections.lablease.lab.plugins.module_utils.times import parse_duration, parse_time
from ansible_collections.lablease.lab.tests.unit.plugins.fake_api import FakeApi


def make(fake, token="secret", retries=3):
    waits = []
    return Client("http://lab.test:8042/", token, retries=retries, opener=fake, sleep=waits.append), waits


def test_bearer_token_and_json():
    fake = FakeApi()
    client, waits = make(fake)
    assert client.get("/me")["name"] == "alice"
    assert fake.calls == [("GET", "/me", None)]


def test_trailing_api_prefix_is_accepted():
    assert Client("http://lab.test/api/v1/", "t").url == "http://lab.test"


def test_reads_are_retried_with_backoff_on_503():
    fake = FakeApi()
    fake.fail_next = [503, 502]
    client, waits = make(fake)
    assert client.get("/me")["name"] == "alice"
    assert waits == [0.5, 1.0]


def test_writes_are_not_retried():
    fake = FakeApi()
    fake.fail_next = [503]
    client, waits = make(fake)
    with pytest.raises(LableaseError) as error:
        client.request("PATCH", "/me", {"email": "a@lab.test"})
    assert error.value.status == 503 and waits == []


def test_a_post_is_sent_again_with_the_same_idempotency_key():
    fake = FakeApi()
    fake.add_system("s1.lab.test")
    fake.fail_next = [504]
    keys = []

    def opener(url, headers=None, **kwargs):
        keys.append(headers.get("Idempotency-Key"))
        return fake(url, headers=headers, **kwargs)
    client, waits = make(opener)
    status, pool = client.request("POST", "/pools", {"name": "gpu"})
    assert (status, pool["name"]) == (201, "gpu") and waits == [0.5]
    assert len(keys) == 2 and keys[0] == keys[1] and keys[0].startswith("lablease.lab-")


def test_idempotent_posts_are_retried():
    fake = FakeApi()
    fake.add_system("s1.lab.test")
    fake.fail_next = [504]
    client, waits = make(fake)
    status, made = client.request("POST", "/reservations", {"system": "s1.lab.test", "request_id": "x"}, idempotent=True)
    assert status == 201 and waits == [0.5]


def test_unreachable_server_is_named():
    fake = FakeApi()
    fake.fail_next = [URLError("[Errno 111] Connection refused")] * 4
    client, waits = make(fake)
    with pytest.raises(LableaseError) as error:
        client.get("/me")
    assert "cannot reach the lablease server at http://lab.test:8042" in error.value.message
    assert "after 4 attempts" in error.value.message
    assert len(waits) == 3


def test_bad_token_says_what_to_do():
    client, waits = make(FakeApi(), token="wrong")
    with pytest.raises(LableaseError) as error:
        client.get("/me")
    assert error.value.status == 401
    assert "refused the token" in error.value.message and "LABLEASE_TOKEN" in error.value.message


def test_missing_url_or_token():
    with pytest.raises(LableaseError, match="LABLEASE_URL"):
        Client("", "t")
    with pytest.raises(LableaseError, match="LABLEASE_TOKEN"):
        Client("http://lab.test", None)


def test_conflict_message():
    conflict = {"resource": "s1.lab.test", "user": "alice", "start": "2026-11-22T10:00:00Z", "end": "2026-11-22T14:00:00Z"}
    problem = {"status": 409, "detail": "...", "conflict": conflict}
    assert problem_message(409, problem, "POST", "http://x") == "s1.lab.test is reserved by alice until 2026-11-22T14:00:00Z"
    problem["conflict"]["end"] = None
    problem["conflict"]["user"] = None
    assert problem_message(409, problem, "POST", "http://x") == "s1.lab.test is reserved by another user until further notice"


def test_problem_detail_is_the_message():
    assert problem_message(422, {"detail": "duration: must be positive"}, "POST", "u") == "duration: must be positive"


@pytest.mark.parametrize("text, seconds", [
    ("4h", 14400), ("30m", 1800), ("1h30m", 5400), ("2d", 172800), ("1w", 604800), ("PT4H", 14400),
    ("P1DT2H", 93600), ("1:30:00", 5400), ("90", 90), (45, 45), ("2 hours", 7200),
])
def test_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["soon", "", "PT", "-4h", "0", "4x", True])
def test_bad_durations(text):
    with pytest.raises(ValueError):
        parse_duration(text)


@pytest.mark.parametrize("text", ["P1Y", "P1M", "1y", "2 years", "1mo", "3 months"])
def test_years_and_months_are_refused_as_the_server_does(text):
    with pytest.raises(ValueError, match="^duration: years and months have no fixed length; use weeks or days$"):
        parse_duration(text)


def test_times():
    assert parse_time("2026-11-22T14:00:00Z") == parse_time("2026-11-22T16:00:00+02:00")
    with pytest.raises(ValueError, match="time zone"):
        parse_time("2026-11-22T14:00:00")
    with pytest.raises(ValueError):
        parse_time("tomorrow")


def test_list_plan_modes():
    from ansible_collections.lablease.lab.plugins.module_utils.client import list_plan
    assert list_plan(["a", "b"], ["b", "c"], "exact") == (["c"], ["a"])
    assert list_plan(["a", "b"], ["b", "c"], "add") == (["c"], [])
    assert list_plan(["a", "b"], ["b", "c"], "remove") == ([], ["b"])
    assert list_plan(["a"], None, "exact") == ([], [])


def test_wait_until_stops_at_the_deadline():
    from ansible_collections.lablease.lab.plugins.module_utils.client import wait_until
    now = [0.0]
    slept = []

    def sleep(seconds):
        slept.append(seconds)
        now[0] += seconds

    assert wait_until(lambda: None, 5, 2, sleep=sleep, clock=lambda: now[0]) == (None, True)
    assert slept == [2, 2, 1]
    answers = iter([None, "done"])
    assert wait_until(lambda: next(answers), 5, 2, sleep=sleep, clock=lambda: now[0]) == ("done", False)


def test_a_batch_of_one_goes_as_itself_and_of_several_as_one_request():
    fake = FakeApi()
    fake.add_system("s1.lab.test")
    client, waits = make(fake)
    assert client.batch().add("PATCH", "/systems/s1.lab.test", {"lab": "west"}).send()[0]["lab"] == "west"
    assert fake.writes == [("PATCH", "/systems/s1.lab.test", {"lab": "west"})]
    answers = client.batch().add("PATCH", "/systems/s1.lab.test", {"lab": "east"}).add(
        "DELETE", "/systems/s1.lab.test", query={"force": True}).send()
    assert answers[0]["lab"] == "east" and answers[1] is None and fake.writes[-1][1] == "/batch"
    assert fake.writes[-1][2]["requests"][1] == {"method": "DELETE", "path": "/api/v1/systems/s1.lab.test",
                                                 "query": {"force": True}}


def test_a_refused_request_of_a_batch_names_itself_and_changes_nothing():
    fake = FakeApi()
    fake.add_system("s1.lab.test")
    client, waits = make(fake)
    batch = client.batch().add("PATCH", "/systems/s1.lab.test", {"lab": "west"}).add(
        "PATCH", "/systems/nope.lab.test", {"lab": "west"})
    with pytest.raises(LableaseError) as refused:
        batch.send()
    assert refused.value.status == 404 and refused.value.message == (
        "request 2 of the batch (PATCH /api/v1/systems/nope.lab.test): no system named nope.lab.test")
    assert fake.systems["s1.lab.test"]["lab"] is None


def test_validate_only_writes_keep_nothing_and_a_server_that_ignores_it_is_named():
    fake = FakeApi()
    fake.add_system("s1.lab.test")
    client, waits = make(fake)
    client.validate_only = True
    assert client.request("PATCH", "/systems/s1.lab.test", {"lab": "west"})[1]["lab"] == "west"
    assert fake.systems["s1.lab.test"]["lab"] is None and fake.writes == [] and client.get("/me")["name"] == "alice"

    def old_server(url, method="GET", data=None, headers=None, **kwargs):
        answer = fake(url.replace("validate_only=true", "validate_only=false"), method, data, headers, **kwargs)
        return answer

    client.open = old_server
    with pytest.raises(LableaseError) as refused:
        client.request("PATCH", "/systems/s1.lab.test", {"lab": "west"})
    assert "does not know validate_only" in refused.value.message
