# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.lablease.lab.plugins.modules import access_policy, group, loan, pool


def test_loan_lend_keep_extend_and_return(api, run):
    api.add_system("s1.lab.test")
    args = {"system": "s1.lab.test", "recipient": "bob", "duration": "1d"}
    result, failed = run(loan.main, args, check=True)
    assert result["changed"] and result["loan"]["recipient"] == "bob" and api.writes == []
    result, failed = run(loan.main, args, diff=True)
    assert result["changed"] and api.writes[-1] == ("POST", "/systems/s1.lab.test/loan",
                                                    {"recipient": "bob", "duration": "1d"})
    assert result["diff"]["after"]["recipient"] == "bob"
    result, failed = run(loan.main, args)
    assert not result["changed"] and len(api.writes) == 1
    result, failed = run(loan.main, dict(args, duration="2d"))
    assert result["changed"] and api.writes[-1][:2] == ("PATCH", "/systems/s1.lab.test/loan")
    assert api.writes[-1][2]["end"] == "2026-11-24T10:00:00Z"
    result, failed = run(loan.main, {"system": "s1.lab.test", "recipient": "carol"})
    assert failed and result["msg"] == "s1.lab.test is lent to bob until 2026-11-24T10:00:00Z"
    result, failed = run(loan.main, {"system": "s1.lab.test", "state": "absent"})
    assert result["changed"] and result["returned"]["recipient"] == "bob" and "s1.lab.test" not in api.loans
    result, failed = run(loan.main, {"system": "s1.lab.test", "state": "absent"})
    assert not result["changed"]


def test_loan_over_another_users_reservation_needs_force(api, run):
    api.add_system("s1.lab.test")
    held = api.add_reservation("s1.lab.test", user="carol")
    args = {"system": "s1.lab.test", "recipient": "bob"}
    checked, failed = run(loan.main, args, check=True)  # the server is asked: it refuses as it would
    assert failed and checked["status"] == 409 and api.writes == [] and held["returned_at"] is None
    result, failed = run(loan.main, args)
    assert failed and "reserved by carol" in result["msg"] and result["status"] == 409
    assert checked["msg"] == result["msg"] and "force" in result["msg"]
    result, failed = run(loan.main, dict(args, force=True), check=True)
    assert result["changed"] and not failed and api.loans == {}
    result, failed = run(loan.main, dict(args, force=True))
    assert result["changed"] and api.writes[-1] == ("POST", "/systems/s1.lab.test/loan",
                                                    {"recipient": "bob", "force": True})
    assert held["returned_at"] is not None and api.loans["s1.lab.test"]["recipient"] == "bob"


def test_loan_defaults_to_the_caller_and_checks_input(api, run):
    api.add_system("s1.lab.test")
    result, failed = run(loan.main, {"system": "s1.lab.test", "limited": True})
    assert api.writes[-1][2] == {"recipient": "alice", "limited": True}
    result, failed = run(loan.main, {"system": "s2.lab.test", "duration": "soon"})
    assert failed and "not a duration" in result["msg"]
    result, failed = run(loan.main, {"system": "nope.lab.test"})
    assert failed and "no system named nope.lab.test" in result["msg"]


def test_pool_create_exact_add_remove_absent(api, run):
    args = {"name": "gpus", "description": "d", "systems": ["s1.lab.test", "s2.lab.test"]}
    result, failed = run(pool.main, args, check=True)
    assert result["changed"] and result["pool"]["systems"] == ["s1.lab.test", "s2.lab.test"] and api.writes == []
    result, failed = run(pool.main, args)
    assert result["changed"] and api.pools["gpus"]["systems"] == ["s1.lab.test", "s2.lab.test"]
    writes = len(api.writes)
    result, failed = run(pool.main, args)
    assert not result["changed"] and len(api.writes) == writes
    result, failed = run(pool.main, {"name": "gpus", "systems": ["s3.lab.test"], "systems_mode": "add"})
    assert api.pools["gpus"]["systems"] == ["s1.lab.test", "s2.lab.test", "s3.lab.test"]
    result, failed = run(pool.main, {"name": "gpus", "systems": ["s1.lab.test"], "systems_mode": "remove"})
    assert api.pools["gpus"]["systems"] == ["s2.lab.test", "s3.lab.test"]
    result, failed = run(pool.main, {"name": "gpus", "systems": ["s3.lab.test"]}, diff=True)
    assert api.pools["gpus"]["systems"] == ["s3.lab.test"] and result["diff"]["before"]["systems"] == [
        "s2.lab.test", "s3.lab.test"]
    result, failed = run(pool.main, {"name": "gpus", "state": "absent"})
    assert result["changed"] and "gpus" not in api.pools
    result, failed = run(pool.main, {"name": "gpus", "state": "absent"})
    assert not result["changed"]


def test_group_members_owners_and_secret(api, run):
    args = {"name": "team", "members": ["bob"], "owners": ["carol"], "webhook_url": "https://x.test/h",
            "webhook_secret": "s3cret"}
    result, failed = run(group.main, args, check=True)
    assert result["changed"] and sorted(result["group"]["owners"]) == ["alice", "carol"] and api.writes == []
    result, failed = run(group.main, args)
    assert result["changed"]
    assert ("PATCH", "/groups/team", {"webhook_url": "https://x.test/h", "webhook_secret": "s3cret"}) in api.sent
    assert sorted(api.groups["team"]["members"]) == ["alice", "bob", "carol"]
    assert sorted(api.groups["team"]["owners"]) == ["alice", "carol"]
    writes = len(api.writes)
    result, failed = run(group.main, args)
    assert not result["changed"] and len(api.writes) == writes
    result, failed = run(group.main, dict(args, update_secret="always"))
    assert result["changed"] and api.writes[-1][2] == {"webhook_secret": "s3cret"}
    result, failed = run(group.main, {"name": "team", "members": ["dave"], "members_mode": "add"})
    assert "dave" in api.groups["team"]["members"]
    # exact: dave and bob go, owners stay (they are members), the caller is never removed
    result, failed = run(group.main, {"name": "team", "members": []})
    assert sorted(api.groups["team"]["members"]) == ["alice", "carol"]
    result, failed = run(group.main, {"name": "team", "owners": ["carol"], "members_mode": "remove"})
    assert api.groups["team"]["owners"] == ["alice"] and "carol" in api.groups["team"]["members"]
    result, failed = run(group.main, {"name": "team", "state": "absent"})
    assert result["changed"] and "team" not in api.groups


def test_access_policy_present_exact_absent_pool(api, run):
    api.add_system("s1.lab.test")
    rules = [{"permission": "reserve", "group": "team"}, {"permission": "view", "everybody": True}]
    result, failed = run(access_policy.main, {"system": "s1.lab.test", "rules": rules}, check=True)
    assert result["changed"] and len(result["added"]) == 1 and api.writes == []
    result, failed = run(access_policy.main, {"system": "s1.lab.test", "rules": rules})
    added = {"permission": "reserve", "group": "team"}
    assert api.writes == [("POST", "/systems/s1.lab.test/access-policy/rules", added)]
    result, failed = run(access_policy.main, {"system": "s1.lab.test", "rules": rules})
    assert not result["changed"] and len(api.writes) == 1
    result, failed = run(access_policy.main, {"system": "s1.lab.test", "rules": rules[:1], "state": "exact"})
    assert result["changed"] and api.writes[-1] == ("PUT", "/systems/s1.lab.test/access-policy", {
        "rules": [{"permission": "reserve", "group": "team"}]})
    result, failed = run(access_policy.main, {"system": "s1.lab.test", "rules": rules[:1], "state": "absent"})
    assert result["changed"] and api.policies["s1.lab.test"]["rules"] == []
    result, failed = run(access_policy.main, {"system": "s1.lab.test", "use_pool_policy": "gpus"})
    assert api.writes[-1] == ("PUT", "/systems/s1.lab.test/access-policy", {"use_pool_policy": "gpus"})
    result, failed = run(access_policy.main, {"system": "s1.lab.test", "use_pool_policy": "gpus"})
    assert not result["changed"]
    result, failed = run(access_policy.main, {"system": "s1.lab.test", "use_pool_policy": ""})
    assert api.policies["s1.lab.test"]["use_pool_policy"] is None


def test_access_policy_rule_needs_exactly_one_grantee(api, run):
    result, failed = run(access_policy.main, {"system": "s1.lab.test", "rules": [
        {"permission": "view", "user": "bob", "everybody": True}]})
    assert failed and "rules[0]: give exactly one of user, group or everybody" in result["msg"]


def test_loan_with_an_end_ends_exactly_then(api, run):
    api.add_system("s1.lab.test")
    result, failed = run(loan.main, {"system": "s1.lab.test", "recipient": "bob", "end": "2030-01-01T00:00:00Z"})
    assert result["changed"] and api.loans["s1.lab.test"]["end"] == "2030-01-01T00:00:00Z"
    writes = len(api.writes)
    result, failed = run(loan.main, {"system": "s1.lab.test", "recipient": "bob", "end": "2030-01-01T00:00:00Z"})
    assert not result["changed"] and len(api.writes) == writes


def test_pool_removing_a_system_an_advance_reservation_holds_needs_force(api, run):
    api.add_system("s1.lab.test")
    api.pools["gpus"] = {"name": "gpus", "description": None, "owner_group": None,
                         "systems": ["s1.lab.test", "s2.lab.test"]}
    ar = api.add_ar("gpu-week", systems=["s1.lab.test"], pools=["gpus"])
    remove = {"name": "gpus", "systems": ["s1.lab.test"], "systems_mode": "remove"}
    result, failed = run(pool.main, remove)
    assert failed and result["status"] == 409 and "repeat with force=true" in result["msg"]
    assert api.pools["gpus"]["systems"] == ["s1.lab.test", "s2.lab.test"] and ar["state"] == "w"
    result, failed = run(pool.main, dict(remove, force=True), check=True)
    assert result["changed"] and result["pool"]["systems"] == ["s2.lab.test"] and api.queries == []
    result, failed = run(pool.main, dict(remove, force=True))
    assert result["changed"] and not failed and api.pools["gpus"]["systems"] == ["s2.lab.test"]
    assert api.queries[-1] == ("DELETE", "/pools/gpus/systems/s1.lab.test", {"force": "true"})
    assert ar["state"] == "E" and ar["error_reasons"] == ["s1.lab.test is no longer in pool(s) gpus"]
    result, failed = run(pool.main, {"name": "gpus", "systems": ["s2.lab.test"], "systems_mode": "remove"})
    assert result["changed"] and api.pools["gpus"]["systems"] == [] and len(api.queries) == 1  # force only if asked


def test_access_policy_locking_out_an_advance_reservation_needs_force(api, run):
    api.add_system("s1.lab.test")
    api.policies["s1.lab.test"] = {"system": "s1.lab.test", "use_pool_policy": None, "rules": [
        {"id": 1, "permission": "view", "user": None, "group": None, "everybody": True},
        {"id": 7, "permission": "reserve", "user": "bob", "group": None, "everybody": False},
        {"id": 8, "permission": "reserve", "user": "carol", "group": None, "everybody": False}]}
    bobs = api.add_ar("bobs", owner="bob")
    carols = api.add_ar("carols", owner="carol")
    gone = {"system": "s1.lab.test", "state": "absent", "rules": [{"permission": "reserve", "user": "bob"}]}
    result, failed = run(access_policy.main, gone)
    assert failed and result["status"] == 409 and "repeat with force=true" in result["msg"]
    assert len(api.policies["s1.lab.test"]["rules"]) == 3 and bobs["state"] == "w"
    result, failed = run(access_policy.main, dict(gone, force=True))
    assert result["changed"] and [r["id"] for r in result["removed"]] == [7] and bobs["state"] == "E"
    assert api.queries == [("DELETE", "/systems/s1.lab.test/access-policy/rules/7", {"force": "true"})]
    # state=exact replaces the policy with one PUT, which takes force as well; adding a rule never needs it
    exact = {"system": "s1.lab.test", "state": "exact", "rules": [{"permission": "view", "everybody": True}]}
    result, failed = run(access_policy.main, exact)
    assert failed and result["status"] == 409 and carols["state"] == "w"
    result, failed = run(access_policy.main, dict(exact, force=True))
    assert result["changed"] and api.writes[-1] == ("PUT", "/systems/s1.lab.test/access-policy", {
        "rules": [{"permission": "view", "everybody": True}]}) and carols["state"] == "E"
    assert api.queries[-1] == ("PUT", "/systems/s1.lab.test/access-policy", {"force": "true"})
    result, failed = run(access_policy.main, {"system": "s1.lab.test", "rules": [
        {"permission": "reserve", "user": "bob"}]})
    assert result["changed"] and not failed and len(api.queries) == 2
