"""`lablease pool set --automation-floor`, `reserve --purpose/--force`, `loan grant --purpose` and
`ar modify --release` against a real server (docs/cli.md)."""
from __future__ import annotations

import json


def test_pool_floor_purpose_and_force(cli, add_system):
    for name in ("fl1", "fl2"):
        add_system(f"{name}.lab.test", condition="automated")
    made = json.loads(cli.ok("pool", "create", "floored", "--automation-floor", "2", "--json").out)
    assert made["automation_floor"] == 2
    cli.ok("pool", "add", "floored", "fl1.lab.test", "fl2.lab.test")
    refused = cli("reserve", "fl1.lab.test", "--duration", "1h", "--purpose", "firmware")
    assert refused.code == 5 and "floor of 2" in refused.err and refused.err.count("\n") == 1
    held = cli.ok("reserve", "fl1.lab.test", "--duration", "1h", "--purpose", "firmware", "--force")
    assert "purpose: firmware" in [" ".join(line.split()) for line in held.lines]
    shown = json.loads(cli.ok("system", "show", "fl1.lab.test", "--json").out)
    assert shown["reservation"]["purpose"] == "firmware"
    lowered = cli.ok("pool", "set", "floored", "--automation-floor", "0")
    assert "automation floor: 0" in [" ".join(line.split()) for line in lowered.lines]
    lent = json.loads(cli.ok("loan", "grant", "fl2.lab.test", "bob", "--purpose", "driver work", "--json").out)
    assert lent["purpose"] == "driver work"
    assert cli("pool", "set", "floored").code == 2


def test_ar_modify_release(cli, add_system):
    for name in ("rel1", "rel2"):
        add_system(f"{name}.lab.test", condition="automated")
    ar = json.loads(cli.ok("ar", "create", "--host", "rel1.lab.test,rel2.lab.test", "-d", "2h", "--json").out)
    changed = json.loads(cli.ok("ar", "modify", str(ar["id"]), "--release", "rel2.lab.test", "--json").out)
    assert changed["systems"] == ["rel1.lab.test"] and changed["released"][0]["system"] == "rel2.lab.test"
    free = json.loads(cli.ok("reserve", "rel2.lab.test", "--duration", "1h", "--json").out)
    assert free["system"] == "rel2.lab.test"
