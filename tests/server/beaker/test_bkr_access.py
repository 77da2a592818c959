"""bkr pool-*, policy-* and group-* commands, checked through /api/v1."""
from __future__ import annotations

import json


def test_pools_create_add_list_remove_delete(hub):
    admin, api = hub.bkr("admin"), hub.api()
    fqdns = [hub.add_system(f"pool{n}.bkr.test") for n in (1, 2)]
    assert api.post("/groups", json={"name": "bkr-lab", "members": ["alice"]}).status_code == 201
    admin.ok("pool-create", "--owning-group", "bkr-lab", "--description", "the lab's", "bkr-pool")
    pool = api.get("/pools/bkr-pool").json()
    assert (pool["owner_group"], pool["description"]) == ("bkr-lab", "the lab's")
    hub.bkr("alice").ok("pool-add", "--pool", "bkr-pool", "--system", fqdns[0], "--system", fqdns[1])  # a member
    assert sorted(api.get("/pools/bkr-pool").json()["systems"]) == fqdns
    assert hub.bkr("bob").ok("pool-systems", "bkr-pool").split() == fqdns
    assert "bkr-pool" in hub.bkr("bob").ok("pool-list").split()
    assert hub.bkr("bob").ok("pool-list", "--owning-group", "bkr-lab").split() == ["bkr-pool"]
    assert "HTTP error: 403" in hub.bkr("bob").fails("pool-remove", "--pool", "bkr-pool", "--system", fqdns[0])
    hub.bkr("alice").ok("pool-remove", "--pool", "bkr-pool", "--system", fqdns[0])
    assert api.get("/pools/bkr-pool").json()["systems"] == [fqdns[1]]
    assert "owned by a group, not a user" in admin.fails("pool-create", "--owner", "alice", "other-pool")
    admin.ok("pool-delete", "bkr-pool")
    assert api.get("/pools/bkr-pool").status_code == 404


def test_policy_grant_list_revoke(hub):
    fqdn = hub.add_system("pol1.bkr.test")
    admin = hub.bkr("admin")
    admin.ok("policy-grant", "--system", fqdn, "--permission", "loan_self", "--permission", "control_system",
             "--user", "bob")
    rules = hub.api().get(f"/systems/{fqdn}/access-policy").json()["rules"]
    assert {(r["permission"], r["user"]) for r in rules if r["user"]} == {("loan_self", "bob"),
                                                                          ("control_system", "bob")}
    listed = json.loads(hub.bkr("bob").ok("policy-list", "--format", "json", "--mine", fqdn))["rules"]
    assert {r["permission"] for r in listed} >= {"loan_self", "control_system", "view"}
    assert "loan_self" in hub.bkr("bob").ok("policy-list", "--user", "bob", fqdn)
    assert "HTTP error: 403" in hub.bkr("bob").fails("policy-grant", "--system", fqdn, "--permission", "edit_system",
                                                     "--everybody")
    admin.ok("policy-revoke", "--system", fqdn, "--permission", "loan_self", "--user", "bob")
    rules = hub.api().get(f"/systems/{fqdn}/access-policy").json()["rules"]
    assert {(r["permission"], r["user"]) for r in rules if r["user"]} == {("control_system", "bob")}


def test_groups_create_members_modify_list(hub):
    alice = hub.bkr("alice")
    assert "Group created: bkr-team." in alice.ok("group-create", "--description", "a team", "bkr-team")
    group = hub.api().get("/groups/bkr-team").json()
    assert (group["owners"], group["description"]) == (["alice"], "a team")
    alice.ok("group-modify", "--add-member", "bob", "--description", "our team", "bkr-team")
    alice.ok("group-modify", "--grant-owner", "bob", "bkr-team")
    group = hub.api().get("/groups/bkr-team").json()
    assert (sorted(group["owners"]), group["description"]) == (["alice", "bob"], "our team")
    members = json.loads(alice.ok("group-members", "bkr-team"))
    assert sorted((m["username"], m["owner"]) for m in members) == [("alice", True), ("bob", True)]
    alice.ok("group-modify", "--revoke-owner", "bob", "bkr-team")
    alice.ok("group-modify", "--remove-member", "bob", "bkr-team")
    assert hub.api().get("/groups/bkr-team").json()["members"] == ["alice"]
    assert "bkr-team" in hub.bkr("bob").ok("group-list").split()
    assert hub.bkr("bob").ok("group-list", "--owner", "alice").split() == ["bkr-team"]
    assert "HTTP error: 403" in hub.bkr("bob").fails("group-modify", "--add-member", "bob", "bkr-team")
    assert "renaming a group is not supported" in alice.fails("group-modify", "--group-name", "x", "bkr-team")
