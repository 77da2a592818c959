"""`lablease health-check ...`, `system check`, `systems --health` and `reserve --healthy-within` (docs/health.md)."""
import json

SMOKE_XML = '<job><recipeSet><recipe><distroRequires/><hostRequires/><task name="/smoke"/></recipe></recipeSet></job>'


def test_defining_a_check_asking_for_one_and_reserving_with_healthy_within(cli, add_system):
    add_system("hc1.lab.test", condition="automated")
    added = json.loads(cli.ok("health-check", "add", "hc-cli", "--system", "hc1.lab.test", "--job", "-",
                              "--every", "1d", "--json", stdin=SMOKE_XML).out)
    assert (added["system"], added["every"], added["job"]["recipe_sets"][0]["recipes"][0]["tasks"][0]["name"]) == (
        "hc1.lab.test", 86400, "/smoke")
    listed = cli.ok("health-check", "list").lines
    assert listed[0].split() == ["NAME", "FOR", "EVERY", "AFTER", "RECIPES", "OWNER"]
    assert any(line.split()[:4] == ["hc-cli", "system", "hc1.lab.test", "1d"] for line in listed[1:])
    changed = json.loads(cli.ok("health-check", "change", "hc-cli", "--after-recipes", "5", "--json").out)
    assert (changed["after_recipes"], changed["every"]) == (5, 86400)

    shown = cli.ok("system", "check", "hc1.lab.test").out  # no worker here: due now, not yet submitted
    assert "health" in shown and "unknown since" in shown and "next check" in shown
    unknown = json.loads(cli.ok("systems", "--health", "unknown", "--json").out)
    assert "hc1.lab.test" in [s["fqdn"] for s in unknown]
    refused = cli("reserve", "hc1.lab.test", "--healthy-within", "24h")
    assert refused.code == 5 and "no passing health check within the last 1d" in refused.err, refused
    waiting = json.loads(cli.ok("reserve", "hc1.lab.test", "--wait", "--healthy-within", "24h", "--duration", "1h",
                                "--json").out)  # in the line until a check passes, not refused
    assert waiting["state"] == "waiting" and waiting["system"] is None, waiting
    cli.ok("return", str(waiting["id"]))
    assert cli.ok("health-check", "delete", "hc-cli").out == "deleted health check hc-cli\n"
    assert cli("health-check", "show", "hc-cli").code == 3
