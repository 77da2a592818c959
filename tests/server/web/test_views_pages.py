"""Timelines, the queue with its reasons, jobs, advance reservations and utilisation, through the pages."""
import re
from datetime import datetime, timedelta

from lablease.services.people import users
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
        users.ensure_arusers(uow, START)
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
    assert f"reservation {r['id']}, 2026-11-22 12:00 UTC to 2026-11-22 16:00 UTC" in html  # the bar's tooltip
    assert 'class="now"' in html
    # a day from tomorrow noon: the AR alone (p1's reservation has ended by then, the loan goes on)
    later = alice.page("/pools/rack?start=2026-11-23T12:00&end=2026-11-24T12:00")
    assert [k for k, _ in bars(later)] == ["recipe", "ar", "loan"]
    assert 'class="now"' not in later
    assert alice.get("/pools/rack?span=2y").status_code == 422
    assert alice.get("/pools/nope").status_code == 404
    assert "rack" in alice.page("/pools")
    # each kind links to what it is, and is drawn with its own pattern (colour and texture), the AR also dashed
    links = dict((kind, href) for href, kind in re.findall(r'<a href="([^"]+)"><rect class="bar bar-\w+" '
                                                            r'data-kind="(\w+)"', html))
    assert links == {"reservation": "/reservations", "recipe": f"/jobs/{job['id']}",
                     "ar": f"/advance-reservations/{ar['id']}", "loan": "/systems/p4.lab.test"}
    patterns = dict(re.findall(r'<pattern id="tl-(\w+)"[^>]*>(.*?)</pattern>', html))
    assert sorted(patterns) == ["ar", "loan", "recipe", "reservation"] and len(set(patterns.values())) == 4
    assert [set(re.findall(r'fill="(#\w+)"', body)) for body in patterns.values()].count({"#3b6fc4"}) == 1
    assert all(len(re.findall(r"<(?:rect|circle)", body)) > 1 for kind, body in patterns.items()
               if kind != "reservation")  # textured: stripes or dots over the colour; the reservation solid
    assert re.search(r'data-kind="ar"[^>]*stroke-dasharray', html)
    # spans: 1, 7 and 30 days, from a seventh of the span before now; tomorrow's AR is outside one day
    for span, days in (("1d", 1), ("7d", 7), ("30d", 30)):
        shown = alice.page(f"/pools/rack?span={span}")
        start, end = (datetime.fromisoformat(t.replace("Z", "+00:00")) for t in re.search(
            r'<div class="timeline" data-start="([^"]+)" data-end="([^"]+)"', shown).groups())
        assert end - start == days * 24 * H and abs((START - start) - days * 24 * H / 7) < timedelta(seconds=1)
        assert ("ar" in [k for k, _ in bars(shown)]) == (span != "1d")
    # the system page shows the same bars for its one system
    assert bars(alice.page("/systems/p1.lab.test")) == [("reservation", "p1.lab.test")]


def test_the_queue_says_why_each_recipe_waits_and_per_system_on_expanding(web, person):
    web.system("q1.lab.test", condition="automated")
    web.system("q2.lab.test", condition="automated")
    web.alice.post("/jobs", {"recipe_sets": [{"recipes": [
        {"host_requires": {"field": "hostname", "op": "=", "value": "q1.lab.test"}}]}]})
    _, waiting = web.alice.post("/jobs", {"whiteboard": "second", "recipe_sets": [{"recipes": [
        {"host_requires": {"field": "hostname", "op": "=", "value": "q1.lab.test"}}]}]})
    web.alice.post("/jobs", {"recipe_sets": [{"recipes": [
        {"host_requires": {"field": "hostname", "op": "=", "value": "q2.lab.test"}}]}]})  # keeps q2 busy
    _, never = web.alice.post("/jobs", {"recipe_sets": [{"recipes": [
        {"host_requires": {"field": "hostname", "op": "=", "value": "q2.lab.test"}}]}]})
    web.admin.patch("/systems/q2.lab.test", {"condition": "manual"})  # now it can never start (refused if submitted)
    web.clock.now = START + 3 * H
    bob = person("bob")
    html = bob.page("/queue")
    categories = re.findall(r'<tr data-recipe="\d+" data-category="([\w-]+)">', html)
    assert categories == ["busy", "no-match"]
    # position, job, submitter, priority, what it wants and how long it has waited, in that order
    first = re.search(r'<tr data-recipe="\d+" data-category="busy">(.*?)</tr>', html, re.S).group(1)
    cells = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", first, re.S)][:6]
    assert cells[0] == "1" and cells[1].startswith(f"job {waiting['id']} · recipe ") and cells[2:4] == ["alice",
                                                                                                         "Normal"]
    assert cells[4] == "hostname = q1.lab.test" and cells[5] == "3h"  # what it wants in words, not JSON
    # expanding: the busy candidate, and the other systems counted (each reason apart on the job's page)
    assert '<li data-ruled-out="1">1 system ruled out: outside its host requirements or its owner&#39;s access</li>' \
        in html
    assert f'href="/jobs/{waiting["id"]}#recipe-' in html
    assert "q1.lab.test, the one system it asks for, is busy" in html and "widen" not in html
    assert '<li data-busy="q1.lab.test">q1.lab.test: busy until further notice</li>' in html
    assert re.search(r'class="banner" data-oldest="\d+">Oldest wait: .*3h', html)
    assert bob.get(f"/jobs/{waiting['id']}").status_code == 404  # another's job: not shown, as in the API
    alice = person("alice")
    job = alice.page(f"/jobs/{waiting['id']}")
    assert "second" in job and 'class="category cat-busy"' in job
    assert "Each system's verdict" in job and "hostname = q1.lab.test" not in job
    (recipe_id,) = re.findall(r'<tr data-recipe="(\d+)">', job)
    judged = alice.page(f"/jobs/{waiting['id']}?reasons={recipe_id}")  # expanded: each system's verdict
    assert re.findall(r'<tr data-system="([^"]+)"><td>[^<]+</td><td>([^<]+)</td>', judged) == [
        ("q1.lab.test", "a candidate"), ("q2.lab.test", "hostname = q1.lab.test")]
    assert '<li data-busy="q1.lab.test">' in judged and "Next systems" not in judged
    second = alice.page(f"/jobs/{waiting['id']}?reasons={recipe_id}&from=1")  # paged by name
    assert re.findall(r'<tr data-system="([^"]+)">', second) == ["q2.lab.test"] and "Previous systems" in second
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
    window = ('<dt>Window</dt><dd><time datetime="2026-11-23T08:00:00Z">2026-11-23 08:00 UTC</time> to '
              '<time datetime="2026-11-23T10:00:00Z">2026-11-23 10:00 UTC</time> (2h)</dd>')
    assert window in shown and '<dt>Systems</dt><dd><a href="/systems/a1.lab.test">a1.lab.test</a></dd>' in shown
    assert "<dt>Reserved so far</dt>" in shown and "<dt>Used</dt>" in shown
    listed = alice.page("/advance-reservations")
    assert re.findall(r'<th scope="col">([^<]+)</th>', listed)[:8] == [
        "ar-id", "name", "owner", "state", "start at", "end at", "duration", "systems"]  # qrstat's columns
    changed = alice.follow(alice.post(f"/advance-reservations/{ar['id']}/modify",
                                      {"name": "renamed", "acl": "alice, bob", "back": shown}))
    assert "renamed" in changed and web.alice.get(f"/advance-reservations/{ar['id']}")[1]["acl"] == ["alice", "bob"]
    assert "<dt>ACL</dt><dd>alice, bob</dd>" in changed
    refused = alice.follow(alice.post("/advance-reservations", {**fields, "back": "/advance-reservations"}))
    assert "cannot grant: 1 system(s) asked for, 0 eligible and free; ruled out: 1 booked during the window" in refused
    web.admin.patch("/systems/a1.lab.test", {"condition": "broken"})  # its system breaks: the AR is in error
    broken = alice.page(f"/advance-reservations/{ar['id']}")
    assert '<dd data-state="E">' in broken and re.search(r'<dt>Why</dt><dd class="reason">[^<]*a1\.lab\.test', broken)
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
    days = alice.page("/utilisation?per=day&from=2026-11-20T00:00&until=2026-11-23T00:00")
    assert re.findall(r'<g class="column" data-at="([^"]+)">', days) == ["2026-11-22T00:00:00Z"]  # a day's bar
    assert "<option selected>30d</option>" in alice.page("/utilisation?period=30d")  # the period selector
    assert alice.get("/utilisation?pool=nope").status_code == 422


def test_my_reservations_page_shows_a_waiting_one_and_leaves_the_queue(web, person):
    web.system("q1.lab.test")
    web.alice.post("/reservations", {"system": "q1.lab.test", "duration": "2h"})
    _, waiting = web.bob.post("/reservations", {"wait": True, "system": "q1.lab.test", "duration": "1h"})
    bob = person("bob")
    html = bob.page("/reservations")
    assert "waiting in the queue for system q1.lab.test: position 1" in html and 'href="/systems/None"' not in html
    assert "1h once granted" in html and "no end" not in html  # it has no end yet: how long once it has a system
    bob.follow(bob.post(f"/reservations/{waiting['id']}/return", {"back": "/reservations"}))
    assert web.bob.get(f"/reservations/{waiting['id']}")[1]["state"] == "cancelled"


def test_a_job_page_shows_its_sets_recipes_systems_results_and_reservesys_and_a_system_page_its_aborted_share(
        web, person):
    web.system("r1.lab.test", condition="automated")
    on_r1 = {"host_requires": {"field": "hostname", "op": "=", "value": "r1.lab.test"}}
    _, first = web.alice.post("/jobs", {"whiteboard": "first", "recipe_sets": [{"priority": "High", "recipes": [
        {**on_r1, "reservesys": {"duration": "2h", "onabort": True}}]}]})
    _, second = web.alice.post("/jobs", {"recipe_sets": [{"recipes": [on_r1]}]})
    (recipe,) = web.alice.get(f"/jobs/{first['id']}")[1]["recipe_sets"][0]["recipes"]
    alice = person("alice")
    running = alice.page(f"/jobs/{first['id']}")
    assert re.search(r'<h2 id="rs-\d+">Recipe set \d+ · High · (scheduled|running|waiting|installing)</h2>', running)
    row = re.search(rf'<tr data-recipe="{recipe["id"]}">(.*?)</tr>', running, re.S).group(1)
    assert '<a href="/systems/r1.lab.test">r1.lab.test</a>' in row and "(<a href=\"/reservations\">reservation" in row
    assert "2h on onabort, onfail, onpass, onwarn" in row and "Cancel job" in running
    web.alice.patch(f"/recipes/{recipe['id']}", {"status": "aborted"})
    done = alice.page(f"/jobs/{first['id']}")
    row = re.search(rf'<tr data-recipe="{recipe["id"]}">(.*?)</tr>', done, re.S).group(1)
    assert re.findall(r"<td>(\w+)</td>", row)[:3] == [str(recipe["id"]), "aborted", "none"]  # id, status, result
    assert "Cancel job" not in done
    assert "100 %" in re.search(r"Recent recipes aborted</dt><dd>([^<]+)", alice.page("/systems/r1.lab.test")).group(0)
    assert f"job {second['id']}" in alice.page("/jobs")


def test_the_labs_page_shows_each_agents_state_and_its_labs_commands(web, person):
    from lablease.services.provisioning import labs
    with UnitOfWork(web.db) as uow:
        labs.add(uow, START, "north")
        labs.add(uow, START, "south")
        labs.seen(uow, labs.find(uow, "north"), web.clock() - timedelta(seconds=20), "1.2.3")
        uow.commit()
    html = person("alice").page("/labs")
    rows = dict(re.findall(r'<tr data-lab="(\w+)" data-state="(\w+)">', html))
    assert rows == {"north": "online", "south": "never"}
    assert "1.2.3" in html and "just now" in html
    assert 'href="/labs"' in html  # in the navigation
