# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.lablease.lab.plugins.modules import job, recipe

SETS = [{"recipes": [{"host_requires": {"field": "arch", "op": "=", "value": "x86_64"}}]}]


def test_a_rerun_reattaches_to_its_unfinished_job_and_submits_again_after_it_finished(api, run):
    first = run(job.main, {"recipe_sets": SETS})[0]
    again = run(job.main, {"recipe_sets": SETS})[0]
    assert first["changed"] and not again["changed"] and again["job_id"] == first["job_id"]
    checked = run(job.main, {"recipe_sets": SETS}, check=True)[0]
    assert not checked["changed"] and checked["job_id"] == first["job_id"]
    other = run(job.main, {"recipe_sets": SETS, "request_id": "second copy"})[0]
    assert other["changed"] and other["job_id"] != first["job_id"]
    run(job.main, {"job_id": first["job_id"], "state": "absent"})
    later = run(job.main, {"recipe_sets": SETS})[0]
    assert later["changed"] and later["job_id"] not in (first["job_id"], other["job_id"])


def test_check_mode_submits_nothing(api, run):
    result, failed = run(job.main, {"recipe_sets": SETS, "wait": True}, check=True)
    assert result["changed"] and result["job_id"] is None and api.writes == []
    result, failed = run(job.main, {"recipe_sets": [{"recipes": []}]}, check=True)
    assert failed and "recipe_sets[0].recipes" in result["msg"]


def test_submit_json_and_wait_until_running(api, run, monkeypatch):
    api.polls[1] = [{"status": "scheduled"}, {"status": "running", "system": "a1.lab.test", "reservation": 7}]
    result, failed = run(job.main, {"recipe_sets": SETS, "whiteboard": "w", "wait": True, "wait_sleep": 0})
    assert not failed and result["changed"] and result["systems"] == ["a1.lab.test"]
    assert api.writes[0] == ("POST", "/jobs", {"recipe_sets": SETS, "whiteboard": "w"})
    assert result["recipes"][0]["reservation"] == 7
    # re-attach: never submits
    result, failed = run(job.main, {"job_id": 1, "wait": True})
    assert not result["changed"] and len(api.writes) == 1 and result["systems"] == ["a1.lab.test"]


def test_submit_xml_with_its_content_type(api, run, tmp_path, monkeypatch):
    seen = {}
    real = api.__call__

    def opener(url, method="GET", data=None, headers=None, **kwargs):
        if method == "POST":
            seen.update(headers=headers, data=data)
            return real(url, method=method, data=None, headers=headers, **kwargs)
        return real(url, method=method, data=data, headers=headers, **kwargs)

    from ansible_collections.lablease.lab.plugins.module_utils import client as client_module
    monkeypatch.setattr(client_module, "open_url", opener)
    path = tmp_path / "job.xml"
    path.write_text("<job><recipeSet><recipe/></recipeSet></job>")
    result, failed = run(job.main, {"xml_file": str(path)})
    assert result["changed"] and seen["headers"]["Content-Type"] == "application/xml"
    assert seen["data"] == b"<job><recipeSet><recipe/></recipeSet></job>"
    result, failed = run(job.main, {"xml_file": str(tmp_path / "missing.xml")})
    assert failed and "is not a file" in result["msg"]


def test_wait_fails_on_abort_and_on_timeout(api, run):
    api.add_job(statuses=("aborted",))
    result, failed = run(job.main, {"job_id": 1, "wait": True})
    assert failed and result["msg"] == "job 1: recipe 1 was aborted"
    api.add_job(statuses=("waiting",))
    result, failed = run(job.main, {"job_id": 2, "wait": True, "wait_timeout": 0})
    assert failed and result["msg"] == "job 2: not running after 0 s: recipe 2 is waiting (no system matches)"
    assert result["job_id"] == 2 and not result["changed"]


def test_cancel_once(api, run):
    api.add_job(statuses=("waiting",))
    result, failed = run(job.main, {"job_id": 1, "state": "absent"}, check=True)
    assert result["changed"] and api.writes == []
    result, failed = run(job.main, {"job_id": 1, "state": "absent"})
    assert result["changed"] and api.writes == [("POST", "/jobs/1/cancel", None)]
    result, failed = run(job.main, {"job_id": 1, "state": "absent"})
    assert not result["changed"] and len(api.writes) == 1


def test_recipe_report_and_finish_idempotently(api, run):
    api.add_job(statuses=("running",), systems=("a1.lab.test",))
    tasks = [{"name": "/smoke", "result": "pass"}]
    result, failed = run(recipe.main, {"recipe_id": 1, "tasks": tasks}, diff=True)
    assert result["changed"] and api.writes == [("PATCH", "/recipes/1", {"tasks": tasks})]
    result, failed = run(recipe.main, {"recipe_id": 1, "tasks": tasks})
    assert not result["changed"] and len(api.writes) == 1
    result, failed = run(recipe.main, {"recipe_id": 1, "status": "completed", "result": "fail"}, check=True)
    assert result["changed"] and result["recipe"]["result"] == "fail" and len(api.writes) == 1
    result, failed = run(recipe.main, {"recipe_id": 1, "status": "completed", "result": "pass"})
    assert result["changed"] and api.recipes[1]["status"] == "completed"
    result, failed = run(recipe.main, {"recipe_id": 1, "status": "completed", "result": "pass"})
    assert not result["changed"] and len(api.writes) == 2


def test_recipe_completes_only_when_running(api, run):
    api.add_job(statuses=("waiting",))
    result, failed = run(recipe.main, {"recipe_id": 1, "status": "completed"})
    assert failed and "recipe 1 is waiting: only a running recipe can complete" in result["msg"]
    result, failed = run(recipe.main, {"recipe_id": 1, "status": "aborted"})
    assert result["changed"] and api.recipes[1]["status"] == "aborted"
