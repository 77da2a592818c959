"""The server answers lists a page at a time; `lablease` follows every page, so nothing is cut off."""
from __future__ import annotations

import json

MANY = 250


def test_systems_lists_every_page(cli, add_system, server):
    names = [add_system(f"page{n:03d}.lab.test", lab="paging") for n in range(MANY)]
    first = server.admin.get("/systems", params={"lab": "paging"})
    assert len(first.json()) == 100 and 'rel="next"' in first.headers["Link"]  # the server pages
    listed = json.loads(cli.ok("systems", "--lab", "paging", "--json").out)
    assert [s["fqdn"] for s in listed] == names
    table = cli.ok("systems", "--lab", "paging")
    assert [line.split()[0] for line in table.lines[1:]] == names
