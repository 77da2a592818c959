"""`lablease loan`, `pool(s)` and `policy` against a real server."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from datetime import datetime, timedelta

import pytest

from lablease.domain.times import format_when
from lablease.api.routes import ROUTES


def on_server(path: str) -> bool:
    return any(route.path.endswith(path) for route in ROUTES)


needs_loans = pytest.mark.skipif(not on_server("/loan"), reason="endpoint not yet on the server")
needs_pools = pytest.mark.skipif(not on_server("/pools/<name>/systems"), reason="endpoint not yet on the server")
needs_policy = pytest.mark.skipif(not on_server("/access-policy/rules"), reason="endpoint not yet on the server")


def block(result) -> dict[str, str]:
    return {key.strip(): value.strip() for key, value in (line.split(":", 1) for line in result.lines)}


def parse_time(value: str) -> datetime:
    return datetime.fromisoformat(value)


def read_people(value: str) -> datetime:
    """A time of the CLI's human output (`2026-11-24 19:15 UTC`), read back."""
    return datetime.strptime(value, "%Y-%m-%d %H:%M UTC")


# --- loans -----------------------------------------------------------------------------------

@needs_loans
def test_loan_grant_show_extend_return(cli, add_system):
    add_system("loan1.lab.test")
    granted = cli.ok("loan", "grant", "loan1.lab.test", "bob", "--duration", "7d", "--comment", "firmware work")
    fields = block(granted)
    assert (fields["system"], fields["recipient"], fields["lender"], fields["comment"]) == \
        ("loan1.lab.test", "bob", "admin", "firmware work")
    assert read_people(fields["end"]) - read_people(fields["start"]) == timedelta(days=7)
    shown = json.loads(cli.ok("loan", "show", "loan1.lab.test", "--json", user="bob").out)
    assert (shown["recipient"], shown["returned_at"]) == ("bob", None)
    extended = json.loads(cli.ok("loan", "extend", "loan1.lab.test", "--by", "1d", "--json").out)
    assert parse_time(extended["end"]) - parse_time(shown["end"]) == timedelta(days=1)
    assert ET.fromstring(cli.ok("loan", "show", "loan1.lab.test", "--xml").out).findtext("recipient") == "bob"
    assert cli.ok("loan", "return", "loan1.lab.test", user="bob").out == "returned the loan of loan1.lab.test\n"
    gone = cli("loan", "show", "loan1.lab.test")
    assert gone.code == 3 and gone.err.startswith("lablease: ") and gone.err.count("\n") == 1


@needs_loans
def test_a_second_loan_is_a_conflict(cli, add_system):
    add_system("loan2.lab.test")
    unlimited = cli.ok("loan", "grant", "loan2.lab.test", "bob")
    assert block(unlimited)["end"] == "no limit"
    again = cli("loan", "grant", "loan2.lab.test", "carol")
    assert again.code == 5 and "bob" in again.err and again.err.count("\n") == 1


@needs_loans
def test_lending_a_system_somebody_else_holds_needs_force(cli, add_system):
    add_system("loan9.lab.test", condition="manual")
    held = json.loads(cli.ok("reserve", "loan9.lab.test", "--duration", "2h", "--json", user="carol").out)
    refused = cli("loan", "grant", "loan9.lab.test", "bob")
    assert refused.code == 5 and refused.err.count("\n") == 1, refused.err
    assert f"is reserved by carol until {format_when(parse_time(held['end']))} (reservation {held['id']})" in \
        refused.err
    lent = json.loads(cli.ok("loan", "grant", "loan9.lab.test", "bob", "--force", "--json").out)
    assert lent["recipient"] == "bob"
    assert cli.server.admin.get(f"/reservations/{held['id']}").json()["state"] == "returned"


@needs_loans
def test_limited_loan_uses_the_site_default(cli, add_system):
    add_system("loan3.lab.test")
    loan = json.loads(cli.ok("loan", "grant", "loan3.lab.test", "carol", "--limited", "--json").out)
    assert parse_time(loan["end"]) - parse_time(loan["start"]) == timedelta(days=7)  # default_loan_duration


@needs_loans
def test_loan_failures(cli, add_system):
    add_system("loan4.lab.test")
    assert cli("loan", "grant", "loan4.lab.test", "bob", "--duration", "a while").code == 6
    assert cli("loan", "grant", "nowhere.lab.test", "bob").code == 3
    assert cli("loan", "grant", "loan4.lab.test", "carol", user="bob").code == 4
    assert cli("loan", "grant", "loan4.lab.test", "bob", "--duration", "1d", "--limited").code == 2
    assert cli("loan", "extend", "loan4.lab.test").code == 2


@needs_loans
def test_returning_a_reservation_with_return_loan_returns_the_loan(cli, add_system):
    add_system("loan5.lab.test")
    cli.ok("loan", "grant", "loan5.lab.test", "bob", "--duration", "2d")
    reservation = json.loads(cli.ok("reserve", "loan5.lab.test", "--return-loan", "--json", user="bob").out)
    assert reservation["return_loan"] is True
    cli.ok("return", str(reservation["id"]), user="bob")
    assert cli("loan", "show", "loan5.lab.test").code == 3


# --- pools -----------------------------------------------------------------------------------

@needs_pools
def test_pool_create_add_list_show_remove(cli, add_system):
    add_system("pool1.lab.test")
    add_system("pool2.lab.test")
    created = block(cli.ok("pool", "create", "gpu", "--group", "lab-team", "--description", "GPU boxes"))
    assert (created["name"], created["owner group"], created["description"], created["systems"]) == \
        ("gpu", "lab-team", "GPU boxes", "-")
    added = block(cli.ok("pool", "add", "gpu", "pool1.lab.test", "pool2.lab.test", user="carol"))
    assert added["systems"] == "pool1.lab.test, pool2.lab.test"
    listing = cli.ok("pools")
    assert listing.lines[0].split() == ["NAME", "OWNER", "GROUP", "SYSTEMS", "DESCRIPTION"]
    assert any(line.split()[:4] == ["gpu", "lab-team", "pool1.lab.test,", "pool2.lab.test"]
               for line in listing.lines[1:])
    root = ET.fromstring(cli.ok("pool", "show", "gpu", "--xml").out)
    assert root.tag == "pool" and [s.text for s in root.find("systems")] == ["pool1.lab.test", "pool2.lab.test"]
    in_pool = json.loads(cli.ok("systems", "--pool", "gpu", "--json").out)
    assert sorted(s["fqdn"] for s in in_pool) == ["pool1.lab.test", "pool2.lab.test"]
    after = json.loads(cli.ok("pool", "remove", "gpu", "pool2.lab.test", "--json", user="carol").out)
    assert after["systems"] == ["pool1.lab.test"]
    assert [p["name"] for p in json.loads(cli.ok("pools", "--json").out)].count("gpu") == 1


@needs_pools
def test_pool_failures(cli, add_system):
    add_system("pool3.lab.test")
    cli.ok("pool", "create", "arm", "--group", "lab-team")
    assert cli("pool", "create", "arm").code == 5
    assert cli("pool", "show", "no-such-pool").code == 3
    refused = cli("pool", "add", "arm", "pool3.lab.test", user="bob")
    assert refused.code == 4 and refused.err.count("\n") == 1
    assert cli("pool", "add", "arm", "nowhere.lab.test").code == 3
    assert cli("pool", "add", "arm").code == 2


# --- access policy ---------------------------------------------------------------------------

@needs_policy
def test_policy_show_grant_revoke(cli, add_system):
    add_system("pol1.lab.test")
    shown = cli.ok("policy", "show", "pol1.lab.test")
    assert shown.lines[:2] == ["system:           pol1.lab.test", "use pool policy:  -"]
    assert shown.lines[3].split() == ["ID", "PERMISSION", "WHO"]
    rule = block(cli.ok("policy", "grant", "pol1.lab.test", "loan_self", "--user", "bob"))
    assert (rule["permission"], rule["who"]) == ("loan_self", "user bob")
    by_group = json.loads(cli.ok("policy", "grant", "pol1.lab.test", "edit_system", "--group", "lab-team",
                                 "--json").out)
    assert (by_group["group"], by_group["user"], by_group["everybody"]) == ("lab-team", None, False)
    policy = json.loads(cli.ok("policy", "show", "pol1.lab.test", "--json").out)
    assert {(r["permission"], r["user"], r["group"]) for r in policy["rules"]} >= \
        {("loan_self", "bob", None), ("edit_system", None, "lab-team")}
    root = ET.fromstring(cli.ok("policy", "show", "pol1.lab.test", "--xml").out)
    assert root.tag == "access-policy" and len(root.findall("rules/rule")) == len(policy["rules"])
    revoked = cli.ok("policy", "revoke", "pol1.lab.test", rule["id"])
    assert revoked.out == f"revoked rule {rule['id']} of pol1.lab.test\n"
    left = json.loads(cli.ok("policy", "show", "pol1.lab.test", "--json").out)
    assert int(rule["id"]) not in {r["id"] for r in left["rules"]}


@needs_policy
def test_policy_failures(cli, add_system):
    add_system("pol2.lab.test")
    assert cli("policy", "grant", "pol2.lab.test", "reserve", "--user", "carol", user="bob").code == 4
    assert cli("policy", "show", "nowhere.lab.test").code == 3
    assert cli("policy", "grant", "pol2.lab.test", "reserve", "--user", "nobody-at-all").code in (3, 6)
    assert cli("policy", "grant", "pol2.lab.test", "teleport", "--everybody").code == 2
    assert cli("policy", "grant", "pol2.lab.test", "view", "--user", "bob", "--everybody").code == 2
    assert cli("policy", "revoke", "pol2.lab.test", "424242").code == 3


# --- changes that break an advance reservation: refused unless --force ------------------------

def granted_ar(server, **fields) -> int:
    start = (datetime.now().astimezone() + timedelta(days=20)).replace(microsecond=0)
    response = server.admin.post("/advance-reservations", json={"start": start.isoformat(), "duration": "1h", **fields})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def ar_state(server, ar_id: int) -> str:
    return server.admin.get(f"/advance-reservations/{ar_id}").json()["state"]


@needs_pools
def test_pool_remove_that_breaks_an_advance_reservation_needs_force(cli, server, add_system):
    add_system("poolf.lab.test")
    cli.ok("pool", "create", "forced-pool", "--group", "lab-team")
    cli.ok("pool", "add", "forced-pool", "poolf.lab.test", user="carol")
    ar_id = granted_ar(server, pools=["forced-pool"], hosts=["poolf.lab.test"])
    refused = cli("pool", "remove", "forced-pool", "poolf.lab.test", user="carol")
    assert refused.code == 5
    assert refused.err.startswith(f"lablease: this would break advance reservation {ar_id} (")
    assert refused.err.endswith("); repeat with --force to do it anyway (the reservation goes into error)\n")
    assert ar_state(server, ar_id) == "w"
    after = json.loads(cli.ok("pool", "remove", "forced-pool", "poolf.lab.test", "--force", "--json", user="carol").out)
    assert after["systems"] == [] and ar_state(server, ar_id) == "E"


@needs_policy
def test_policy_revoke_that_locks_an_acl_user_out_needs_force(cli, server, add_system):
    add_system("polf.lab.test")
    ar_id = granted_ar(server, hosts=["polf.lab.test"], acl=["bob"])
    rules = json.loads(cli.ok("policy", "show", "polf.lab.test", "--json").out)["rules"]
    reserve = next(r["id"] for r in rules if r["permission"] == "reserve" and r["everybody"])
    refused = cli("policy", "revoke", "polf.lab.test", str(reserve))
    assert refused.code == 5
    assert "bob may no longer use polf.lab.test" in refused.err and "repeat with --force to do it anyway" in refused.err
    assert ar_state(server, ar_id) == "w"
    assert cli.ok("policy", "revoke", "polf.lab.test", str(reserve), "-f").out == \
        f"revoked rule {reserve} of polf.lab.test\n"
    assert ar_state(server, ar_id) == "E"
