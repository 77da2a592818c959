"""Every list pages: `limit`, the next page in a `Link: <...>; rel="next"` header, keyset cursors.

Each list gets more rows than a page holds; the test follows Link to the end, inserting a row
between pages, and checks that every row there at the start is seen exactly once, in the
list's order, and that no page is longer than the limit.
"""
import re
from datetime import timedelta
from urllib.parse import urlencode, urljoin, urlsplit

import pytest

from lablease.api.openapi import openapi_path
from lablease.api.routes import ROUTES
from lablease.config import Settings
from lablease.services.provisioning import labs
from lablease.services.people import users
from lablease.services.handlers import unit_of_work
from lablease.store.uow import UnitOfWork
from tests.support.contract import check_answer

from .conftest import START, Lab, at
from .test_provisioning_api import TREE, setup as provisioning_setup

LIMIT = 2
ROWS = 5  # three pages of two
# Queued for good: its only system is reserved for the whole test (one that could never start is refused).
QUEUED = {"recipe_sets": [{"recipes": [{"host_requires": {"field": "arch", "op": "=", "value": "s390x"}}]}]}


def _busy_s390x(lab):
    lab.system("j.lab.test", condition="automated", arch="s390x")
    assert lab.admin.post("/reservations", {"system": "j.lab.test", "duration": "1w"})[0] == 201


def follow(caller, url):
    """One page: its rows and the absolute path of the next one (None on the last)."""
    response = caller.client.open(url, headers=caller.headers)
    body = response.get_json()
    path = urlsplit(url).path.removeprefix("/api/v1")
    check_answer("GET", path, response.status_code, response.mimetype, body)
    assert response.status_code == 200, body
    link = response.headers.get("Link")
    if link is None:
        return body, None
    target = re.fullmatch(r'<([^>]+)>; rel="next"', link)
    assert target, link
    return body, urljoin(url, target.group(1))


def walk(caller, path, between=None, limit=LIMIT, **query):
    """Every row of a list, page by page; `between` runs before each next page is asked for."""
    url = "/api/v1" + path + "?" + urlencode({**query, "limit": limit})
    rows, pages = [], 0
    while url:
        body, url = follow(caller, url)
        assert len(body) <= limit
        rows += body
        pages += 1
        assert pages <= 50, "the pages never end"
        if url and between:
            between()
    return rows, pages


def _lab(db, tmp_path):
    lab = Lab(db, Settings(data_dir=str(tmp_path / "data")))
    with UnitOfWork(db) as uow:
        users.ensure_arusers(uow, START)
        uow.commit()
    return lab


class Kind:
    """A list: where it is, who reads it, how to add one row to it, and what names a row."""

    def __init__(self, path, reader, add, key=lambda row: row["id"], prepare=None, query=None):
        self.path, self.reader, self.add, self.key = path, reader, add, key
        self.prepare, self.query = prepare, query or {}


def _reservation(lab, n):
    if n % 2:
        lab.clock.advance(minutes=1)  # some start together (the id breaks the tie), some later
    status, reservation = lab.alice.post("/reservations", {"system": "r.lab.test", "duration": "1h"})
    assert status == 201, reservation
    lab.alice.delete(f"/reservations/{reservation['id']}")


def _reserve_for_activity(lab):
    lab.system("r.lab.test")
    lab.extra["id"] = lab.alice.post("/reservations", {"system": "r.lab.test", "duration": "1h"})[1]["id"]


def _advance_reservation(lab, n):
    status, ar = lab.admin.post("/advance-reservations", {"start": at(START + timedelta(hours=n + 1)),
                                                          "duration": "30m", "hosts": ["ar.lab.test"]})
    assert status == 201, ar


def _loan(lab, n):
    assert lab.admin.post("/systems/l.lab.test/loan", {"recipient": "alice"})[0] == 201
    lab.admin.delete("/systems/l.lab.test/loan")


def _add_lab(lab, name: str) -> None:
    """Labs are added by `lablease-server lab add` (the use case it runs), not through the API."""
    with unit_of_work(lab.db, lab.settings) as uow:
        labs.add(uow, lab.clock(), name)
        uow.commit()


FQDNS = {"system activity": "a.lab.test", "loans": "l.lab.test", "installations": "p1.lab.test",
         "commands": "p1.lab.test"}
KINDS = {
    "systems": Kind("/systems", "alice", lambda lab, n: lab.system(f"s{n:02d}.lab.test"), key=lambda r: r["fqdn"]),
    "system activity": Kind("/systems/{fqdn}/activity", "alice",
                            lambda lab, n: lab.admin.patch("/systems/a.lab.test", {"cpus": n + 1}),
                            key=lambda r: (r["action"], r["field"], r["new"]),
                            prepare=lambda lab: lab.system("a.lab.test")),
    "loans": Kind("/systems/{fqdn}/loans", "admin", _loan, prepare=lambda lab: lab.system("l.lab.test")),
    "groups": Kind("/groups", "alice", lambda lab, n: lab.bob.post("/groups", {"name": f"g{n:02d}"}),
                   key=lambda r: r["name"]),
    "pools": Kind("/pools", "alice", lambda lab, n: lab.admin.post("/pools", {"name": f"p{n:02d}"}),
                  key=lambda r: r["name"]),
    "reservations": Kind("/reservations", "alice", _reservation, prepare=lambda lab: lab.system("r.lab.test")),
    "reservation activity": Kind(
        "/reservations/{id}/activity", "alice",
        lambda lab, n: lab.alice.patch(f"/reservations/{lab.extra['id']}", {"extend_by": "1m"}),
        key=lambda r: (r["action"], r["field"], r["new"]), prepare=_reserve_for_activity),
    "jobs": Kind("/jobs", "alice", lambda lab, n: lab.alice.post("/jobs", QUEUED), prepare=_busy_s390x),
    "queue": Kind("/queue", "alice", lambda lab, n: lab.alice.post("/jobs", QUEUED), key=lambda r: r["recipe"],
                  prepare=_busy_s390x),
    "advance reservations": Kind("/advance-reservations", "admin", _advance_reservation,
                                 prepare=lambda lab: lab.system("ar.lab.test", condition="automated")),
    "arches": Kind("/arches", "alice", lambda lab, n: lab.admin.post("/arches", {"name": f"arch{n:02d}"}),
                   key=lambda r: r["name"]),
    "distro trees": Kind("/distro-trees", "alice",
                         lambda lab, n: lab.admin.post("/distro-trees", {**TREE, "name": f"T{n % 2}", "variant": f"v{n}"})),
    "installations": Kind("/systems/{fqdn}/installations", "alice",
                          lambda lab, n: lab.alice.post("/systems/p1.lab.test/provision", {"distro_tree": "Fedora-40"}),
                          prepare=provisioning_setup),
    "commands": Kind("/systems/{fqdn}/commands", "admin",
                     lambda lab, n: lab.admin.post("/systems/p1.lab.test/power", {"action": "on"}),
                     prepare=provisioning_setup),
    "schedules": Kind("/schedules", "alice", lambda lab, n: lab.admin.put(f"/schedules/sub{n:02d}", {}),
                      key=lambda r: r["name"]),
    "schedule bookings": Kind("/schedules/{subject}/reservations", "alice",
                              lambda lab, n: lab.alice.post("/schedules/ip/reservations",
                                                            {"resource_id": f"r{n}", "duration": "1h"}),
                              prepare=lambda lab: lab.admin.put("/schedules/ip", {"default_duration": "2h"})),
    "labs": Kind("/labs", "alice", lambda lab, n: _add_lab(lab, f"lab{n:02d}"), key=lambda r: r["name"]),
    "health checks": Kind("/health-checks", "alice",
                          lambda lab, n: lab.admin.post("/health-checks", {"name": f"h{n:02d}", "system": f"h{n:02d}.lab.test",
                                                                           "job": {"recipe_sets": [{"recipes": [{}]}]}}),
                          key=lambda r: r["name"], prepare=lambda lab: [lab.system(f"h{n:02d}.lab.test") for n in range(12)]),
}


def test_every_list_route_is_covered():
    paged = {openapi_path(route.path).removeprefix("/api/v1") for route in ROUTES if route.paged}
    assert paged == {kind.path for kind in KINDS.values()}


@pytest.mark.parametrize("name", list(KINDS))
def test_each_list_pages_every_row_once_in_order_even_while_rows_are_added(db, tmp_path, name):
    kind = KINDS[name]
    lab = _lab(db, tmp_path)
    lab.extra = {"fqdn": FQDNS.get(name), "subject": "ip"}
    if kind.prepare:
        kind.prepare(lab)
    added = iter(range(100))
    for _ in range(ROWS):
        kind.add(lab, next(added))
    reader = getattr(lab, kind.reader)
    path = kind.path.format(**lab.extra)
    before = [kind.key(row) for row in reader.get(path, limit=1000)[1]]
    assert len(before) > LIMIT * 2  # at least three pages

    rows, pages = walk(reader, path, between=lambda: kind.add(lab, next(added)), **kind.query)

    seen = [kind.key(row) for row in rows]
    assert len(seen) == len(set(seen))  # nothing twice
    assert set(before) <= set(seen)  # nothing there at the start is skipped
    after = [kind.key(row) for row in reader.get(path, limit=1000)[1]]
    assert seen == [key for key in after if key in set(seen)]  # in the list's order
    assert pages >= 3


def test_a_page_of_systems_skips_those_the_caller_may_not_see_and_is_still_full(lab):
    for n in range(6):
        lab.system(f"v{n}.lab.test")
    for n in (1, 2, 4):  # hidden from everybody but admins: only alice's own... nobody's rule gives view
        lab.admin.put(f"/systems/v{n}.lab.test/access-policy", {"rules": []})
    body, url = follow(lab.bob, "/api/v1/systems?limit=2")
    assert [s["fqdn"] for s in body] == ["v0.lab.test", "v3.lab.test"] and url
    body, url = follow(lab.bob, url)
    assert [s["fqdn"] for s in body] == ["v5.lab.test"] and url is None


def test_the_page_size_is_checked_and_defaults_to_a_hundred(lab):
    for n in range(101):
        lab.admin.post("/groups", {"name": f"g{n:03d}"})
    body, url = follow(lab.alice, "/api/v1/groups")
    assert len(body) == 100 and url is not None and "limit" not in url
    assert len(follow(lab.alice, url)[0]) == 1
    for bad, reason in (("0", "must be at least 1"), ("1001", "is too large (at most 1000)"), ("x", "whole number")):
        status, problem = lab.alice.get("/groups", limit=bad)
        assert status == 422 and problem["field"] == "limit" and reason in problem["detail"], problem


def test_a_garbled_altered_or_foreign_cursor_is_refused_saying_so(lab):
    for name in ("p1", "p2", "p3"):
        lab.admin.post("/pools", {"name": name})
        lab.admin.post("/groups", {"name": name})
    _, url = follow(lab.alice, "/api/v1/pools?limit=1")
    cursor = re.search(r"after=([^&]+)", url).group(1)
    payload, _, signature = cursor.partition(".")
    altered = payload[:-1] + ("A" if payload[-1] != "A" else "B") + "." + signature
    for after in ("garbage", altered, cursor + "x", "é"):
        status, problem = lab.alice.get("/pools", after=after)
        assert status == 422 and problem["field"] == "after" and "not a cursor this list gave out" in problem["detail"]
    status, problem = lab.alice.get("/groups", after=cursor)  # a cursor of another list
    assert status == 422 and problem["field"] == "after"


def test_the_next_link_keeps_the_filters(lab):
    for n in range(4):
        lab.system(f"f{n}.lab.test", arch="aarch64" if n % 2 else "x86_64")
    rows, pages = walk(lab.alice, "/systems", limit=1, arch="aarch64")
    assert [s["fqdn"] for s in rows] == ["f1.lab.test", "f3.lab.test"] and pages == 2


def test_following_every_next_link_lists_each_free_system_once(lab):
    """Systems free in a window, two a page: each exactly once, booked ones never (bench/free_systems.py at scale)."""
    for n in range(7):
        lab.system(f"w{n}.lab.test")
    window = {"free_from": at(START + timedelta(hours=2)), "free_until": at(START + timedelta(hours=4))}
    for n, hours in ((1, 3), (4, 1), (5, 5)):  # w4's booking ends before the window: it stays free
        status, _ = lab.alice.post("/reservations", {"system": f"w{n}.lab.test", "duration": f"{hours}h"})
        assert status == 201
    rows, pages = walk(lab.alice, "/systems", **window)
    assert [s["fqdn"] for s in rows] == ["w0.lab.test", "w2.lab.test", "w3.lab.test", "w4.lab.test", "w6.lab.test"]
    assert pages == 3
