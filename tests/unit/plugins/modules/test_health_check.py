# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.lablease.lab.plugins.modules import health_check

XML = '<job><recipeSet><recipe><task name="/smoke"/></recipe></recipeSet></job>'
JSON = {"recipe_sets": [{"recipes": [{"tasks": [{"name": "/smoke"}]}]}]}


def test_create_is_predicted_in_check_mode_then_made_once(api, run):
    args = {"name": "smoke", "arch": "x86_64", "job": XML, "every": "24h", "after_recipes": 10}
    result, failed = run(health_check.main, args, check=True, diff=True)
    assert not failed and result["changed"] and api.writes == []
    assert result["health_check"]["every"] == 86400 and result["diff"]["after"]["source"] == XML
    result, failed = run(health_check.main, args)
    assert result["changed"] and api.writes == [("POST", "/health-checks", {
        "name": "smoke", "arch": "x86_64", "job": XML, "every": 86400, "after_recipes": 10})]
    result, failed = run(health_check.main, dict(args, every="1d"))  # the same length written otherwise
    assert not result["changed"] and len(api.writes) == 1


def test_only_what_differs_is_changed_and_a_new_scope_replaces_the_old(api, run):
    run(health_check.main, {"name": "smoke", "arch": "x86_64", "job": XML})
    result, failed = run(health_check.main, {"name": "smoke", "job": JSON, "after_recipes": 3}, diff=True)
    assert result["changed"] and api.writes[-1] == ("PATCH", "/health-checks/smoke", {"job": JSON, "after_recipes": 3})
    assert result["diff"]["before"]["source"] == XML and result["diff"]["after"]["source"] == JSON
    result, failed = run(health_check.main, {"name": "smoke", "pool": "gpus"}, check=True)
    assert result["changed"] and result["health_check"]["pool"] == "gpus" and result["health_check"]["arch"] is None
    assert api.health_checks["smoke"]["arch"] == "x86_64"  # check mode wrote nothing
    run(health_check.main, {"name": "smoke", "pool": "gpus"})
    assert api.writes[-1] == ("PATCH", "/health-checks/smoke", {"pool": "gpus"})
    assert api.health_checks["smoke"]["pool"] == "gpus" and api.health_checks["smoke"]["arch"] is None


def test_absent_deletes_once(api, run):
    run(health_check.main, {"name": "smoke", "system": "S1.lab.test", "job": JSON})
    assert api.health_checks["smoke"]["system"] == "s1.lab.test"
    result, failed = run(health_check.main, {"name": "smoke", "state": "absent"}, check=True)
    assert result["changed"] and "smoke" in api.health_checks
    result, failed = run(health_check.main, {"name": "smoke", "state": "absent"})
    assert result["changed"] and result["health_check"] is None and "smoke" not in api.health_checks
    result, failed = run(health_check.main, {"name": "smoke", "state": "absent"})
    assert not result["changed"]


def test_bad_options_fail_before_any_call(api, run):
    for args, message in (({"name": "x", "arch": "x86_64", "job": JSON, "every": "soon"}, "every"),
                          ({"name": "x", "arch": "x86_64"}, "job is required"),
                          ({"name": "x", "job": JSON}, "one of system, pool or arch"),
                          ({"name": "x", "arch": "x86_64", "pool": "p", "job": JSON}, "mutually exclusive")):
        result, failed = run(health_check.main, args)
        assert failed and message in result["msg"], (args, result)
    assert api.writes == []
