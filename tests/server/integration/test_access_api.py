"""Access policies, groups and pools over the API."""
from .conftest import START, at  # noqa: F401


def test_policy_rules_one_at_a_time(lab):
    lab.system()
    _, policy = lab.alice.get("/systems/s1.lab.test/access-policy")
    assert {(r["permission"], r["everybody"]) for r in policy["rules"]} == {("view", True), ("reserve", True)}
    status, problem = lab.alice.post("/systems/s1.lab.test/access-policy/rules", {"permission": "edit_system",
                                                                                   "user": "alice"})
    assert status == 403 and "edit_policy" in problem["detail"]
    reserve = next(r for r in policy["rules"] if r["permission"] == "reserve")
    assert lab.admin.delete(f"/systems/s1.lab.test/access-policy/rules/{reserve['id']}")[0] == 204
    status, problem = lab.bob.post("/reservations", {"system": "s1.lab.test"})
    assert status == 403 and "reserve permission" in problem["detail"]
    status, rule = lab.admin.post("/systems/s1.lab.test/access-policy/rules", {"permission": "reserve",
                                                                               "user": "bob"})
    assert status == 201 and rule["user"] == "bob"
    assert lab.bob.post("/reservations", {"system": "s1.lab.test"})[0] == 201
    assert lab.alice.post("/reservations", {"system": "s1.lab.test", "start": at(START.replace(day=25))})[0] == 403
    _, log = lab.admin.get("/systems/s1.lab.test/activity")
    assert [e["new"] for e in log if e["action"] == "policy_changed" and e["new"]] == ["reserve to user bob"]


def test_rules_name_exactly_one_grantee(lab):
    lab.system()
    for body in ({"permission": "reserve"}, {"permission": "reserve", "user": "bob", "everybody": True},
                 {"permission": "fly", "user": "bob"}, {"permission": "reserve", "group": "nogroup"},
                 {"permission": "reserve", "user": "nobody"}):
        status, problem = lab.admin.post("/systems/s1.lab.test/access-policy/rules", body)
        assert status == 422, (body, problem)


def test_groups(lab):
    status, group = lab.alice.post("/groups", {"name": "qe", "members": ["bob"]})
    assert status == 201 and group["owners"] == ["alice"] and group["members"] == ["alice", "bob"]
    assert lab.alice.post("/groups", {"name": "qe"})[0] == 409
    status, problem = lab.bob.post("/groups/qe/members", {"user": "admin"})
    assert status == 403 and "owners of group qe" in problem["detail"]
    assert lab.alice.post("/groups/qe/members", {"user": "bob", "owner": True})[1]["owners"] == ["alice", "bob"]
    assert lab.bob.delete("/groups/qe/members/alice")[0] == 204
    assert lab.admin.get("/groups/qe")[1]["members"] == ["bob"]
    _, me = lab.bob.get("/me")
    assert me["groups"] == ["qe"]


def test_group_rules_grant_to_members(lab):
    lab.system(condition="manual")
    lab.alice.post("/groups", {"name": "qe"})
    policy = lab.admin.get("/systems/s1.lab.test/access-policy")[1]
    lab.admin.put("/systems/s1.lab.test/access-policy",
                  {"rules": [{"permission": "view", "everybody": True}, {"permission": "reserve", "group": "qe"}]})
    assert policy["rules"] != lab.admin.get("/systems/s1.lab.test/access-policy")[1]["rules"]
    assert lab.bob.post("/reservations", {"system": "s1.lab.test"})[0] == 403
    assert lab.alice.post("/reservations", {"system": "s1.lab.test"})[0] == 201


def test_pools(lab):
    lab.system("a.lab.test")
    lab.system("b.lab.test")
    lab.alice.post("/groups", {"name": "qe"})
    status, problem = lab.bob.post("/pools", {"name": "gpu", "owner_group": "qe"})
    assert status == 403
    status, pool = lab.alice.post("/pools", {"name": "gpu", "owner_group": "qe", "description": "GPUs"})
    assert status == 201 and pool == {"name": "gpu", "description": "GPUs", "owner_group": "qe", "systems": [],
                                      "automation_floor": 0}
    lab.alice.post("/pools/gpu/systems", {"fqdn": "b.lab.test"})
    _, pool = lab.alice.post("/pools/gpu/systems", {"fqdn": "a.lab.test"})
    assert pool["systems"] == ["a.lab.test", "b.lab.test"]
    assert lab.bob.post("/pools/gpu/systems", {"fqdn": "a.lab.test"})[0] == 403
    _, listed = lab.bob.get("/systems", pool="gpu")
    assert [s["fqdn"] for s in listed] == ["a.lab.test", "b.lab.test"]
    assert listed[0]["pools"] == ["gpu"]
    status, problem = lab.bob.get("/systems", pool="cpu")
    assert status == 422 and "no pool named cpu" in problem["detail"]
    assert lab.alice.delete("/pools/gpu/systems/a.lab.test")[0] == 204
    assert lab.bob.get("/pools")[1][0]["systems"] == ["b.lab.test"]


def test_a_system_may_use_its_pools_policy(lab):
    lab.system("a.lab.test")
    lab.alice.post("/groups", {"name": "qe"})
    lab.alice.post("/pools", {"name": "gpu", "owner_group": "qe"})
    status, problem = lab.admin.put("/systems/a.lab.test/access-policy", {"use_pool_policy": "gpu"})
    assert status == 422 and "not in pool gpu" in problem["detail"]
    lab.alice.post("/pools/gpu/systems", {"fqdn": "a.lab.test"})
    lab.alice.post("/pools/gpu/access-policy/rules", {"permission": "view", "everybody": True})
    lab.alice.post("/pools/gpu/access-policy/rules", {"permission": "reserve", "group": "qe"})
    _, policy = lab.admin.put("/systems/a.lab.test/access-policy", {"use_pool_policy": "gpu"})
    assert policy["use_pool_policy"] == "gpu"
    assert lab.bob.post("/reservations", {"system": "a.lab.test"})[0] == 403
    assert lab.alice.post("/reservations", {"system": "a.lab.test", "duration": "1h"})[0] == 201
    # leaving the pool puts the system back on its own rules (everybody may reserve)
    lab.alice.delete("/pools/gpu/systems/a.lab.test")
    assert lab.admin.get("/systems/a.lab.test/access-policy")[1]["use_pool_policy"] is None
    assert lab.bob.post("/reservations", {"system": "a.lab.test", "start": at(START.replace(day=24))})[0] == 201


def test_a_pool_or_group_others_still_name_is_deleted_only_when_forced(lab):
    from .test_health_api import SMOKE

    lab.system("r1.lab.test")
    assert lab.alice.post("/groups", {"name": "qa", "members": ["bob"]})[0] == 201
    _, rule = lab.admin.post("/systems/r1.lab.test/access-policy/rules", {"permission": "reserve", "group": "qa"})
    assert lab.alice.post("/pools", {"name": "qa-pool", "owner_group": "qa"})[0] == 201
    lab.admin.post("/pools/qa-pool/systems", {"fqdn": "r1.lab.test"})
    _, pool_rule = lab.admin.post("/pools/qa-pool/access-policy/rules", {"permission": "loan_self", "group": "qa"})
    assert lab.admin.post("/health-checks", {"name": "qa-smoke", "pool": "qa-pool", "job": SMOKE})[0] == 201

    status, problem = lab.alice.delete("/groups/qa")
    assert status == 409 and problem["references"] == [
        f"the reserve rule {rule['id']} of r1.lab.test's access policy",
        f"the loan_self rule {pool_rule['id']} of pool qa-pool's access policy", "pool qa-pool, which it owns"]
    status, problem = lab.admin.delete("/pools/qa-pool")
    assert status == 409 and problem["references"] == ["health check qa-smoke"]
    assert lab.admin.get("/pools/qa-pool")[1]["owner_group"] == "qa"  # nothing changed

    status, forced = lab.alice.delete("/groups/qa", force="true")
    assert status == 200 and forced["changed"] == [
        f"removed the reserve rule {rule['id']} of r1.lab.test's access policy",
        f"removed the loan_self rule {pool_rule['id']} of pool qa-pool's access policy",
        "pool qa-pool has no owning group now (administrators manage it)"]
    assert lab.admin.get("/pools/qa-pool")[1]["owner_group"] is None
    assert lab.admin.get("/pools/qa-pool/access-policy")[1]["rules"] == []
    status, forced = lab.admin.delete("/pools/qa-pool", force="true")
    assert status == 200 and forced == {"deleted": "qa-pool", "changed": ["deleted health check qa-smoke"]}
    assert lab.admin.get("/health-checks/qa-smoke")[0] == 404
    _, log = lab.admin.get("/systems/r1.lab.test/activity")
    assert any(e["action"] == "policy_changed" and e["old"] == "reserve for group qa" for e in log)
