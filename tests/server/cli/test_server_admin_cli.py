"""An administrator's day with `lablease-server` (docs/cli.md): group members, users and their tokens, a
system's condition and removal, deleting pools and groups that others still name — what had needed curl.

The commands run through main() against the live server's database; what they did is read back through
the API, as the server sees it."""
import json
import os
import subprocess

import pytest

from lablease.cli.server import main
from tests.support.live import BIN

from .test_cli_health import SMOKE_XML

REFUSED = 1


@pytest.fixture
def admin(server, monkeypatch, capsys):
    """`lablease-server ARGS` on the live server's database: (exit status, stdout, stderr)."""
    for name in [name for name in os.environ if name.startswith("LABLEASE_")]:
        monkeypatch.delenv(name)
    for name, value in server.env.items():
        if name.startswith("LABLEASE_"):
            monkeypatch.setenv(name, value)

    def run(*args: str):
        capsys.readouterr()
        code = main(list(args))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def test_token_revoke_of_a_label_the_user_has_not_fails_and_revokes_nothing(server, cli):
    token = server.admin_cli("token", "create", "bob", "--name", "ci-runner").strip()
    result = subprocess.run([str(BIN / "lablease-server"), "token", "revoke", "bob", "--name", "nosuch"],
                            env=server.env, capture_output=True, text=True, timeout=60)
    assert result.returncode == REFUSED and result.stdout == ""
    assert result.stderr.startswith("lablease-server: bob has no token named 'nosuch' that is not revoked (theirs: ")
    assert "ci-runner" in result.stderr and token not in result.stderr and "Traceback" not in result.stderr
    env = {"LABLEASE_URL": server.url, "LABLEASE_TOKEN": token}
    assert cli("whoami", env=env).code == 0  # nothing was revoked


def test_a_users_tokens_are_listed_without_their_secrets(admin):
    code, token, _ = admin("user", "add", "tina")
    assert code == 0
    assert admin("token", "create", "tina", "--name", "laptop", "--expires", "30d")[0] == 0
    assert admin("token", "revoke", "tina", "--name", "default")[:2] == (0, "revoked 1 token(s) of tina\n")
    code, out, _ = admin("token", "list", "tina")
    rows = [line.split() for line in out.splitlines()]
    assert code == 0 and rows[0] == ["NAME", "STATE", "CREATED", "EXPIRES", "REVOKED"]
    assert [(row[0], row[1]) for row in rows[1:]] == [("default", "revoked"), ("laptop", "active")]
    listed = json.loads(admin("token", "list", "tina", "--json")[1])
    assert [(t["name"], t["state"], bool(t["expires"])) for t in listed] == [("default", "revoked", False),
                                                                            ("laptop", "active", True)]
    assert token.strip() not in out and "llt_" not in out
    assert admin("token", "list", "nobody")[0] == REFUSED


def test_a_disabled_user_is_refused_until_enabled_and_the_list_says_so(admin, server, cli):
    code, token, _ = admin("user", "add", "dora", "--group", "dora-team")
    env = {"LABLEASE_URL": server.url, "LABLEASE_TOKEN": token.strip()}
    assert cli("whoami", env=env).code == 0
    code, out, _ = admin("user", "disable", "dora")
    assert code == 0 and out.startswith("user dora disabled")
    refused = cli("whoami", env=env)
    assert refused.code == 4 and "user dora is disabled" in refused.err
    users = {u["name"]: u for u in json.loads(admin("user", "list", "--json")[1])}
    assert (users["dora"]["disabled"], users["dora"]["groups"], users["dora"]["tokens"]) == (True, ["dora-team"], 1)
    assert next(line for line in admin("user", "list")[1].splitlines() if line.startswith("dora ")).split()[:4] == [
        "dora", "no", "disabled", "1"]
    assert admin("user", "disable", "dora")[1] == "user dora was disabled already\n"
    assert admin("user", "enable", "dora")[0] == 0
    assert cli("whoami", env=env).code == 0
    assert admin("user", "disable", "nobody")[0] == REFUSED


def test_group_members_are_added_and_removed_arusers_included(admin, server):
    assert admin("group", "add-member", "arusers", "carol")[0] == 0
    assert "carol" in server.admin.get("/groups/arusers").json()["members"]
    code, out, _ = admin("group", "add-member", "lab-team", "bob", "--owner")
    assert code == 0 and out.startswith("bob is an owner of lab-team")
    assert "bob" in server.admin.get("/groups/lab-team").json()["owners"]
    assert admin("group", "remove-member", "arusers", "carol")[:2] == (0, "carol is no longer in arusers\n")
    assert "carol" not in server.admin.get("/groups/arusers").json()["members"]
    code, _, err = admin("group", "remove-member", "arusers", "carol")
    assert code == REFUSED and err == "lablease-server: carol is not a member of arusers\n"
    assert admin("group", "add-member", "arusers", "nobody")[2] == "lablease-server: user: no user named nobody\n"
    assert admin("group", "remove-member", "lab-team", "bob")[0] == 0


def test_a_broken_system_is_repaired_and_a_held_one_removed_only_when_forced(admin, server, add_system):
    add_system("adm1.lab.test", condition="broken")
    code, out, _ = admin("system", "condition", "adm1.lab.test", "manual")
    assert (code, out) == (0, "adm1.lab.test is manual\n")
    assert server.admin.get("/systems/adm1.lab.test").json()["condition"] == "manual"
    history = server.admin.get("/systems/adm1.lab.test/activity").json()
    assert any(entry.get("field") == "condition" and entry.get("new") == "manual" for entry in history)
    held = server.api("bob").post("/reservations", json={"system": "adm1.lab.test", "duration": "1h"}).json()
    code, _, err = admin("system", "remove", "adm1.lab.test")
    assert code == REFUSED and f"has reservation {held['id']} of bob; remove it with force" in err
    assert server.admin.get("/systems/adm1.lab.test").json()["condition"] == "manual"
    code, out, _ = admin("system", "remove", "adm1.lab.test", "--force")
    assert (code, out) == (0, "adm1.lab.test removed (its history stays); returned 1 reservation(s)\n")
    assert server.admin.get("/systems/adm1.lab.test").json()["condition"] == "removed"
    assert server.admin.get(f"/reservations/{held['id']}").json()["state"] == "returned"
    assert admin("system", "condition", "nosuch.lab.test", "manual")[0] == REFUSED


def test_a_pool_a_health_check_or_an_access_policy_names_is_deleted_only_when_forced(admin, server, add_system):
    add_system("adm2.lab.test", condition="automated")
    assert server.admin.post("/pools", json={"name": "adm-pool"}).status_code == 201
    assert server.admin.post("/pools/adm-pool/systems", json={"fqdn": "adm2.lab.test"}).status_code == 200
    assert server.admin.put("/systems/adm2.lab.test/access-policy",
                            json={"use_pool_policy": "adm-pool"}).status_code == 200
    assert server.admin.post("/health-checks", json={"name": "adm-check", "pool": "adm-pool",
                                                     "job": SMOKE_XML}).status_code == 201
    named = "pool adm-pool is still named by health check adm-check; adm2.lab.test, which uses its access policy"
    refused = server.admin.delete("/pools/adm-pool")
    assert refused.status_code == 409 and refused.json()["detail"].startswith(named)
    assert "delete with force=true" in refused.json()["detail"]
    code, _, err = admin("pool", "delete", "adm-pool")
    assert code == REFUSED and err.startswith(f"lablease-server: {named}; delete with --force to ")
    assert server.admin.get("/pools/adm-pool").status_code == 200  # nothing changed
    assert server.admin.get("/health-checks/adm-check").status_code == 200

    code, out, _ = admin("pool", "delete", "adm-pool", "--force")
    assert code == 0 and out.splitlines() == ["pool adm-pool deleted; forcing it also:",
                                              "  deleted health check adm-check",
                                              "  adm2.lab.test uses its own access rules again"]
    assert server.admin.get("/pools/adm-pool").status_code == 404
    assert server.admin.get("/health-checks/adm-check").status_code == 404
    assert server.admin.get("/systems/adm2.lab.test/access-policy").json()["use_pool_policy"] is None


def test_a_group_access_rules_or_a_pool_name_is_deleted_only_when_forced(admin, server, add_system):
    add_system("adm3.lab.test")
    assert admin("group", "add", "adm-team", "--member", "bob")[0] == 0
    rule = server.admin.post("/systems/adm3.lab.test/access-policy/rules",
                             json={"permission": "loan_self", "group": "adm-team"}).json()
    assert server.admin.post("/pools", json={"name": "adm-owned", "owner_group": "adm-team"}).status_code == 201
    named = (f"group adm-team is still named by the loan_self rule {rule['id']} of adm3.lab.test's access policy; "
             "pool adm-owned, which it owns")
    refused = server.admin.delete("/groups/adm-team")
    assert refused.status_code == 409 and refused.json()["detail"].startswith(named)
    code, _, err = admin("group", "delete", "adm-team")
    assert code == REFUSED and named in err and "--force" in err
    assert server.admin.get("/groups/adm-team").status_code == 200

    forced = server.admin.delete("/groups/adm-team", params={"force": "true"})
    assert forced.status_code == 200 and forced.json() == {"deleted": "adm-team", "changed": [
        f"removed the loan_self rule {rule['id']} of adm3.lab.test's access policy",
        "pool adm-owned has no owning group now (administrators manage it)"]}
    assert server.admin.get("/pools/adm-owned").json()["owner_group"] is None
    rules = server.admin.get("/systems/adm3.lab.test/access-policy").json()["rules"]
    assert rule["id"] not in [r["id"] for r in rules]
    # nothing names it: a plain delete, 204 (and the command says only that)
    assert admin("group", "add", "adm-free")[0] == 0
    assert admin("group", "delete", "adm-free")[:2] == (0, "group adm-free deleted\n")
    assert admin("pool", "delete", "adm-owned")[:2] == (0, "pool adm-owned deleted\n")


def test_init_makes_the_first_administrator_once_and_refuses_a_bad_name_before_anything(tmp_path, monkeypatch,
                                                                                      capsys):
    """`init --admin NAME` (docs/cli.md): the token is the last line; run again, it makes no second token."""
    for name in [name for name in os.environ if name.startswith("LABLEASE_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("LABLEASE_DATA_DIR", str(tmp_path / "bad"))
    with pytest.raises(SystemExit) as usage:
        main(["init", "--admin", "no spaces"])
    assert usage.value.code == 2 and "argument --admin: 'no spaces' is not a valid name" in capsys.readouterr().err
    assert not (tmp_path / "bad" / "lablease.db").exists()  # refused before the database was made

    monkeypatch.setenv("LABLEASE_DATA_DIR", str(tmp_path / "site"))
    assert main(["init", "--admin", "root"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("database created at revision ") and "user root created (admin)" in err
    token = out.strip().splitlines()[-1]
    assert main(["init", "--admin", "root"]) == 0
    out, err = capsys.readouterr()
    assert token not in out and "user root exists: no new token" in err
    assert main(["user", "list"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[:4] for line in listed[1:]] == [["root", "yes", "active", "1"]]  # one admin, one token
    assert main(["token", "list", "root"]) == 0 and token not in capsys.readouterr().out
