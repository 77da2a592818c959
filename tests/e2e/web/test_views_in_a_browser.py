"""Timelines, the queue's reasons, jobs, advance reservations and utilisation in Debian's chromium: each page
checked with axe-core and saved under tests/output/web/. With WRITE_DOC_IMAGES=1 the pool timeline is also
saved as docs/images/pool-timeline.png (the README's picture)."""
import os
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

pytest.importorskip("playwright")
from playwright.sync_api import expect  # noqa: E402

DOC_IMAGE = Path(__file__).resolve().parents[3] / "docs" / "images" / "pool-timeline.png"


def rfc(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def on(fqdn: str, **recipe) -> dict:
    return {"recipe_sets": [{"recipes": [{"host_requires": {"field": "hostname", "op": "=", "value": fqdn},
                                          **recipe}]}]}


@pytest.fixture(scope="module")
def lab(site):
    """A pool with every kind of booking, and three recipes waiting for three different reasons."""
    admin, alice, bob = site.admin, site.api("alice"), site.api("bob")
    for name, condition in (("rsv", "manual"), ("run", "automated"), ("adv", "automated"), ("lent", "manual")):
        fqdn = f"{name}.rack.test"
        assert admin.post("/systems", json={"fqdn": fqdn, "arch": "x86_64", "condition": condition,
                                            "cpus": 8, "memory_mb": 16384}).status_code == 201
    assert admin.post("/pools", json={"name": "rack", "description": "the demo rack"}).status_code == 201
    for name in ("rsv", "run", "adv", "lent"):
        admin.post("/pools/rack/systems", json={"fqdn": f"{name}.rack.test"})
    start = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(days=1)
    reservation = bob.post("/reservations", json={"system": "rsv.rack.test", "duration": "1d"}).json()
    running = alice.post("/jobs", json={"whiteboard": "nightly", **on("run.rack.test")}).json()
    ar = admin.post("/advance-reservations", json={"name": "release-test", "start": rfc(start), "duration": "8h",
                                                   "hosts": ["adv.rack.test"], "acl": ["alice"]})
    assert ar.status_code == 201, ar.text
    admin.post("/systems/lent.rack.test/loan", json={"recipient": "bob", "duration": "3d"})
    busy = alice.post("/jobs", json={"whiteboard": "waits for run", **on("run.rack.test")}).json()
    bound = alice.post("/jobs", json={"whiteboard": "in the AR", "recipe_sets": [
        {"ar": ar.json()["id"], "recipes": [{"runtime_limit": 1800}]}]}).json()
    # a job that can never start is refused when submitted: this one becomes impossible after (its only
    # match, kept busy meanwhile, stops being an s390x)
    zed = {"fqdn": "zed.lab.test", "arch": "s390x", "condition": "automated"}
    assert admin.post("/systems", json=zed).status_code == 201
    alice.post("/jobs", json=on("zed.lab.test"))
    never = alice.post("/jobs", json={"whiteboard": "s390x", "recipe_sets": [{"recipes": [
        {"host_requires": {"field": "arch", "op": "=", "value": "s390x"}}]}]}).json()
    assert admin.patch("/systems/zed.lab.test", json={"arch": "x86_64"}).status_code == 200
    return {"reservation": reservation, "running": running, "ar": ar.json(), "busy": busy, "bound": bound,
            "never": never}


def test_the_pool_timeline_draws_every_kind_and_links_each_bar(visit, site, lab):
    person = visit()
    person.sign_in("alice")
    page = person.go("/pools/rack?span=7d")
    chart = page.locator("svg.chart")
    for kind, fqdn in (("reservation", "rsv"), ("recipe", "run"), ("ar", "adv"), ("loan", "lent")):
        expect(chart.locator(f"g[data-system='{fqdn}.rack.test'] rect[data-kind='{kind}']")).to_have_count(1)
        expect(page.locator(f"table.bookings tr[data-kind='{kind}'][data-system='{fqdn}.rack.test']")).to_have_count(1)
    expect(chart.locator("line.now")).to_have_count(1)
    person.check("pool-timeline")
    if os.environ.get("WRITE_DOC_IMAGES"):
        page.locator("main").screenshot(path=str(DOC_IMAGE))
    page.locator("g[data-system='run.rack.test'] rect[data-kind='recipe']").click()
    expect(page).to_have_url(site.url + f"/jobs/{lab['running']['id']}")
    expect(page.locator("h1")).to_contain_text("nightly")
    person.check("job")
    person.go("/pools")
    person.check("pools")
    person.only_loopback()


def test_the_queue_says_why_each_recipe_waits(visit, lab):
    person = visit()
    person.sign_in("alice")
    page = person.go("/queue")
    expected = {lab["busy"]["id"]: ("busy", "run.rack.test, the one system it asks for, is busy"),
                lab["bound"]["id"]: ("advance-reservation", f"Waits for advance reservation {lab['ar']['id']}"),
                lab["never"]["id"]: ("no-match", "No system can ever run it")}
    for job_id, (category, sentence) in expected.items():
        row = page.locator("table.queue tr", has=page.locator(f"a[href='/jobs/{job_id}']"))
        expect(row).to_have_attribute("data-category", category)
        expect(row.locator("p.sentence")).to_contain_text(sentence)
    busy = page.locator("table.queue tr", has=page.locator(f"a[href='/jobs/{lab['busy']['id']}']"))
    busy.locator("summary").click()
    expect(busy.locator("li[data-busy='run.rack.test']")).to_be_visible()
    expect(page.locator("p.banner")).to_contain_text("Oldest wait")
    person.check("queue")
    person.go("/jobs")
    person.check("jobs")
    plain = visit(javascript=False)  # the per-system details open without a script
    plain.sign_in("alice")
    page = plain.go("/queue")
    row = page.locator("table.queue tr", has=page.locator(f"a[href='/jobs/{lab['busy']['id']}']"))
    row.locator("summary").click()
    expect(row.locator("li[data-busy='run.rack.test']")).to_be_visible()


def test_advance_reservations_and_utilisation_pages(visit, lab):
    person = visit()
    person.sign_in("alice")
    page = person.go("/advance-reservations?user=*")
    expect(page.locator(f"tr[data-ar='{lab['ar']['id']}']")).to_contain_text("adv.rack.test")
    person.check("advance-reservations")
    page.locator(f"tr[data-ar='{lab['ar']['id']}'] a").click()
    expect(page.locator("[data-state]")).to_contain_text("waiting")
    person.check("advance-reservation")
    page = person.go("/utilisation?pool=rack")
    expect(page.locator("[data-figure='busy']")).to_be_visible()
    person.check("utilisation")
    assert re.search(r"utilisation", page.title(), re.I)


RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?([Zz]|[+-]\d{2}:?\d{2})")
# What a person reads on a page: its text as shown, and the tooltips of its charts.
SHOWN = "() => document.body.innerText + '\\n' + [...document.querySelectorAll('svg title')].map(t => t.textContent).join('\\n')"


def test_no_page_shows_a_person_a_raw_rfc_3339_time(visit, site, lab):
    """Every page, a refusal's note and a system's history write times as people read them
    (2026-11-24 19:15 UTC); RFC 3339 is only for machines (the <time> elements' datetime)."""
    person = visit()
    person.sign_in("alice")
    page = person.go("/reservations")
    page.get_by_label("System (fully qualified name)").fill("rsv.rack.test")  # bob holds it: refused
    page.locator("form.take").get_by_role("button", name="Take").click()
    refusal = page.get_by_role("alert")
    expect(refusal).to_contain_text("rsv.rack.test is reserved by bob")
    expect(refusal).to_contain_text(" UTC")
    shown = {"/reservations (a refusal)": page.evaluate(SHOWN)}
    jobs = [lab[name]["id"] for name in ("running", "busy", "bound", "never")]
    for path in ["/systems", "/systems/rsv.rack.test", "/systems/lent.rack.test", "/systems/adv.rack.test",
                 "/reservations", "/pools", "/pools/rack?span=7d", "/systems/rsv.rack.test?span=30d", "/queue",
                 "/jobs", *[f"/jobs/{job}" for job in jobs], "/advance-reservations?user=*",
                 f"/advance-reservations/{lab['ar']['id']}", "/utilisation?pool=rack"]:
        shown[path] = person.go(path).evaluate(SHOWN)
    history = shown["/systems/rsv.rack.test"]
    assert f"reserved: reservation {lab['reservation']['id']} until" in history  # a history line with a time
    raw = {path: RFC3339.findall(text) and RFC3339.search(text).group(0) for path, text in shown.items()}
    assert {path: found for path, found in raw.items() if found} == {}
    assert all(" UTC" in text for path, text in shown.items() if path.startswith(("/systems/", "/advance-reservations/")))
