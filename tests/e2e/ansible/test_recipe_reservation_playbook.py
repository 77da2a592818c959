"""The `reservation` module's state=absent on a system a job of the caller runs on: the server refuses to
return a recipe's reservation (it ends with its recipe), and the task fails saying so — it neither reports
the reservation returned nor leaves the recipe running on a system given to someone else."""
from __future__ import annotations

import pytest

from tests.e2e.ansible.test_playbooks import ansible_env, playbook, results
from tests.support.live import LiveServer


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    live = LiveServer(tmp_path_factory.mktemp("server") / "data", workers=1, threads=2).start()
    try:
        live.alice, = live.add_users("alice", then=(
            ("system", "add", "n1.lab.test", "--arch", "x86_64", "--condition", "automated"),))
        yield live
    finally:
        live.stop()


def test_state_absent_on_a_recipes_reservation_fails_naming_the_recipe(server, tmp_path):
    answer = server.alice.post("/jobs", json={"recipe_sets": [{"recipes": [{}]}]})
    assert answer.status_code == 201, answer.text
    job = answer.json()
    [recipe] = job["recipe_sets"][0]["recipes"]
    assert recipe["status"] == "running" and recipe["system"] == "n1.lab.test"

    back = playbook(tmp_path, [{"name": "return", "lablease.lab.reservation": {
        "system": "n1.lab.test", "state": "absent"}}], "back.yml")
    [refused] = results(ansible_env(server, user="alice"), back)
    assert refused["failed"], refused
    assert f"recipe {recipe['id']} of job {job['id']}" in refused["msg"] and "job cancel" in refused["msg"]
    assert server.alice.get(f"/reservations/{recipe['reservation']}").json()["state"] == "active"
    assert server.alice.get(f"/recipes/{recipe['id']}").json()["status"] == "running"
