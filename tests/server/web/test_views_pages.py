"""Timelines, the queue with its reasons, jobs, advance reservations and utilisation, through the pages."""
import re
from datetime import timedelta

from lablease.services import users
from lablease.store.uow import UnitOfWork
from lablease.worker.loop import Worker
from tests.server.integration.conftest import START, at

H = timedelta(hours=1)


def bars(html: str) -> list[tuple[str, str]]:
    """(kind, system) of every bar in the SVG, in order."""
    found = []
    for row in re.findall(r'<g class="row" data-system="([^"]+)">(.*?)</g>', html, re.S):
        found += [(kind, row[0]) for kind in re.findall(r'<rect class="bar bar-\w+" data-kind="(\w+)"', row[1])]
    return found


def table(html: str) -> list[tuple[str, str]]:
    return re.findall(r'<tr data-kind="(\w+)" data-system="([^"]+)">', html)


def arusers(web, name: str) -> None:
    with UnitOfWork(web.db) as uow:
        users.ensure_arusers(uow.session, START)
        uow.commit()
    web.admin.post("/groups/arusers/members", {"user": name})


def test_a_pool_timeline_shows_every_kind_of_booking_as_bars_and_rows(web, person):
    for name in ("p1", "p2", "p3", "p4"):
        web.system(f"{name}.lab.test", condition="automated" if name == "p2" else "manual")
    web.admin.post("/pools", {"name": "rack"})
    for name in ("p1", "p2", "p3", "p4"):
        web.admin.post("/pools/rack/systems", {"fqdn": f"{name}.lab.test"})
    arusers(web, "alice")
    _, r = web.bob.post("/reservations", {"system": "p1.lab.test", "duration": "4h"})
    _, job = web.alice.post("/jobs", {"recipe_sets": [{"recipes": [
        {"host_requires": {"field": "hostname", "op": "=", "value": "p2.lab.test"}}]}]})
    _, ar = web.alice.post("/advance-reservations", {"start": at(START + 24 * H), "duration": "6h",
                                                     "hosts": ["p3.lab.test"]})
    web.admin.post("/systems/p4.lab.test/loan", {"recipient": "bob", "duration": "2d"})
    alice = person("alice")
    html = alice.page("/pools/rack?span=7d")
    assert bars(html) == [("reservation", "p1.lab.test"), ("recipe", "p2.lab.test"), ("ar", "p3.lab.test"),
                          ("loan", "p4.lab.test")]
    assert sorted(table(html)) == sorted((k, s) for k, s in bars(html))
    assert f'href="/jobs/{job["id"]}"' in html and f'href="/advance-reservations/{ar["id"]}"' in html
    assert f"reservation {r['id']}, {at(START)} to {at(START + 4 * H)}" in html  # the bar's tooltip
    assert 'class="now"' in html
    # a day from tomorrow noon: the AR alone (p1's reservation has ended by then, the loan goes on)
    later = alice.page("/pools/rack?start=2026-11-23T12:00&end=2026-11-24T12:00")
    assert [k for k, _ in bars(later)] == ["recipe", "ar", "loan"]
    assert 'class="now"' not in later
    assert alice.get("/pools/rack?span=2y").status_code == 422
    assert alice.get("/pools/nope").status_code == 404
    assert "rack" in alice.page("/pools")
    # the system page shows the same bars for its one system
    assert bars(alice.page("/systems/p1.lab.test")) == [("reservation", "p1.lab.test")]


def test_the_queue_says_why_each_recipe_waits_and_per_system_on_expanding(web, person):
    web.system("q1.lab.test", condition="automated")
    web.alice.post("/jobs", {"recipe_sets": [{"recipes": [
        {"host_requires": {"field": "hostname", "op": "=", "value": "q1.lab.test"}}]}]})
    _, waiting = web.alice.post("/jobs", {"whiteboard": "second", "recipe_sets": [{"recipes": [
        {"host_requires": {"field": "hostname", "op": "=", "value": "q1.lab.test"}}]}]})
    _, never = web.alice.post("/jobs", {"recipe_sets": [{"recipes": [
        {"host_requires": {"field": "arch", "op": "=", "value": "s390x"}}]}]})
    web.clock.now = START + 3 * H
    bob = person("bob")
    html = bob.page("/queue")
    categories = re.findall(r'<tr data-recipe="\d+" data-category="([\w-]+)">', html)
    assert categories == ["busy", "no-match"]
    assert "All 1 candidate system(s) are busy" in html and "Wait, or widen the host requirements" in html
    assert '<li data-busy="q1.lab.test">q1.lab.test: busy until further notice</li>' in html
    assert re.search(r'class="banner" data-oldest="\d+">Oldest wait: .*3h', html)
    assert bob.get(f"/jobs/{waiting['id']}").status_code == 404  # another's job: not shown, as in the API
    alice = person("alice")
    job = alice.page(f"/jobs/{waiting['id']}")
    assert "second" in job and 'class="category cat-busy"' in job
    page = alice.page(f"/jobs/{never['id']}")
    assert "No system can ever run it" in page and "Cancel job" in page
    done = alice.follow(alice.post(f"/jobs/{never['id']}/cancel", {"back": f"/jobs/{never['id']}"}))
    assert f"Job {never['id']} is cancelled." in done and "cancelled" in done
    assert web.alice.get(f"/jobs/{never['id']}")[1]["status"] == "cancelled"
    refused = bob.follow(bob.post(f"/jobs/{waiting['id']}/cancel", {"back": "/queue"}))
    assert f"no job {waiting['id']}" in refused
    assert web.alice.get(f"/jobs/{waiting['id']}")[1]["status"] == "queued"
    assert f"job {waiting['id']}" in alice.page("/jobs")


def test_advance_reservations_are_checked_made_changed_and_deleted_from_the_pages(web, person):
    web.system("a1.lab.test", condition="automated")
    arusers(web, "alice")
    alice = person("alice")
    alice.page("/advance-reservations")
    fields = {"name": "demo", "start": "2026-11-23T08:00", "duration": "2h", "hosts": "a1.lab.test",
              "back": "/advance-reservations"}
    checked = alice.follow(alice.post("/advance-reservations", {**fields, "validate_only": "1"}))
    assert "It could be granted now, on a1.lab.test; nothing was made." in checked
    assert web.alice.get("/advance-reservations")[1] == []
    shown = alice.follow(alice.post("/advance-reservations", fields))
    (ar,) = web.alice.get("/advance-reservations")[1]
    assert f"Advance reservation {ar['id']} is granted." in shown and "waiting" in shown and "Accounting" in shown
    changed = alice.follow(alice.post(f"/advance-reservations/{ar['id']}/modify",
                                      {"name": "renamed", "acl": "alice, bob", "back": shown}))
    assert "renamed" in changed and web.alice.get(f"/advance-reservations/{ar['id']}")[1]["acl"] == ["alice", "bob"]
    refused = alice.follow(alice.post("/advance-reservations", {**fields, "back": "/advance-reservations"}))
    assert "cannot grant: 1 system(s) asked for, 0 eligible and free; ruled out: 1 booked during the window" in refused
    gone = alice.follow(alice.post(f"/advance-reservations/{ar['id']}/delete", {"back": "/advance-reservations"}))
    assert "The advance reservation is deleted." in gone
    assert web.alice.get(f"/advance-reservations/{ar['id']}")[1]["state"] == "d"


def test_utilisation_shows_the_aggregated_hours_as_bars_cards_and_csv(web, person):
    web.system("u1.lab.test")
    web.bob.post("/reservations", {"system": "u1.lab.test", "duration": "2h"})
    web.clock.now = START + 4 * H
    Worker(web.settings, web.db, web.clock).run_pass()
    alice = person("alice")
    html = alice.page("/utilisation?per=hour&from=2026-11-22T12:00&until=2026-11-22T16:00")
    assert re.findall(r'<g class="column" data-at="([^"]+)">', html) == [at(START + n * H) for n in range(4)]
    assert html.count('data-category="manual"') == 2 and html.count('data-category="idle"') == 2
    assert re.search(r'data-figure="busy"><h2>In use</h2><p class="figure">50.0 %', html)
    response = alice.get("/utilisation.csv?per=hour&from=2026-11-22T12:00&until=2026-11-22T16:00")
    assert response.headers["Content-Type"].startswith("text/csv")
    lines = response.get_data(as_text=True).splitlines()
    assert lines[0] == "start,systems,recipe_seconds,manual_seconds,idle_seconds,broken_seconds"
    assert lines[1:] == [f"{at(START)},1,0,3600,0,0", f"{at(START + H)},1,0,3600,0,0",
                         f"{at(START + 2 * H)},1,0,0,3600,0", f"{at(START + 3 * H)},1,0,0,3600,0"]
    assert alice.get("/utilisation?pool=nope").status_code == 422


def test_my_reservations_page_shows_a_waiting_one_and_leaves_the_queue(web, person):
    web.system("q1.lab.test")
    web.alice.post("/reservations", {"system": "q1.lab.test", "duration": "2h"})
    _, waiting = web.bob.post("/reservations", {"wait": True, "system": "q1.lab.test", "duration": "1h"})
    bob = person("bob")
    html = bob.page("/reservations")
    assert "waiting in the queue: position 1" in html and 'href="/systems/None"' not in html
    bob.follow(bob.post(f"/reservations/{waiting['id']}/return", {"back": "/reservations"}))
    assert web.bob.get(f"/reservations/{waiting['id']}")[1]["state"] == "cancelled"
