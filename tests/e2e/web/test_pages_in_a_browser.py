"""The pages in Debian's chromium: sign in and out, take/extend/return, a disabled action, privacy, CSRF,
JavaScript off; every page checked with axe-core and saved as a screenshot (tests/output/web/)."""
import re
from datetime import datetime, timedelta

import pytest

from lablease.web.pages import NAV
from tests.e2e.web.conftest import PASSWORD

pytest.importorskip("playwright")
from playwright.sync_api import expect  # noqa: E402


def add_system(site, fqdn: str, **fields) -> str:
    response = site.admin.post("/systems", json={"fqdn": fqdn, "arch": "x86_64", "condition": "manual", **fields})
    assert response.status_code == 201, response.text
    return fqdn


def shows_reservation_bar(page, reservation_id: int, end: str) -> float:
    """The system page's timeline draws the reservation as one bar ending at `end` and lists it in the table
    below; returns the bar's width."""
    bar = page.locator("svg.chart rect[data-kind='reservation']")
    expect(bar).to_have_count(1)
    expect(bar).to_have_attribute("data-end", end)
    row = page.locator("table.bookings tr[data-kind='reservation']")
    expect(row).to_have_count(1)
    expect(row).to_contain_text(f"reservation {reservation_id}")
    expect(row.locator("time").last).to_have_attribute("datetime", end)
    return float(bar.get_attribute("width"))


def hours_between(earlier: str, later: str) -> float:
    return (datetime.fromisoformat(later) - datetime.fromisoformat(earlier)) / timedelta(hours=1)


def test_sign_in_and_sign_out(visit, site):
    add_system(site, "first.lab.test", lab="brno")
    person = visit()
    page = person.go("/systems")
    expect(page).to_have_url(re.compile(r"/login\?next=/systems$"))
    person.check("login")
    person.sign_in("alice", "not her password")
    expect(page.get_by_role("alert")).to_have_text("unknown user name or wrong password")
    person.sign_in("alice")
    expect(page).to_have_url(site.url + "/systems")
    expect(page.locator("p.pressure")).to_contain_text(re.compile(r"\d+ of \d+ available · 0 queued"))
    expect(page.locator("tr[data-fqdn='first.lab.test']")).to_contain_text("free")
    person.check("systems")
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("status")).to_have_text("You are signed out.")
    person.go("/reservations")
    expect(page).to_have_url(re.compile(r"/login\?next=/reservations$"))
    person.only_loopback()


def test_take_extend_and_return_from_the_system_page(visit, site):
    fqdn = add_system(site, "take.lab.test", memory_mb=8192, cpus=4)
    person = visit()
    person.sign_in("alice")
    page = person.go(f"/systems/{fqdn}")
    person.check("system-free")
    page.get_by_label("For how long").select_option("4h")
    page.get_by_role("button", name="Take").click()
    expect(page.get_by_role("status")).to_contain_text(f"You hold {fqdn} until")
    expect(page.locator("[data-holder]")).to_have_text("alice")
    (mine,) = site.api("alice").get("/reservations", params={"user": "me", "active": "true"}).json()
    end = mine["end"]
    taken = shows_reservation_bar(page, mine["id"], end)
    page.get_by_role("button", name="Extend +1h").click()
    expect(page.get_by_role("status")).to_contain_text("now ends")
    after = site.api("alice").get(f"/reservations/{mine['id']}").json()["end"]
    assert hours_between(end, after) == 1  # the API sees the hour added
    assert shows_reservation_bar(page, mine["id"], after) > taken  # and the bar grew by it
    person.check("system-held")
    page.get_by_role("button", name="Return").click()
    expect(page.get_by_role("status")).to_have_text(f"{fqdn} is returned.")
    expect(page.locator("[data-holder]")).to_have_text("nobody: free")
    returned = site.api("alice").get(f"/reservations/{mine['id']}").json()
    assert returned["state"] == "returned" and returned["end"] < end
    # What is left on the timeline is the time it was held: the bar now ends at the return
    assert shows_reservation_bar(page, mine["id"], returned["end"]) < taken
    person.only_loopback()


def test_take_extend_and_return_from_my_reservations(visit, site):
    fqdn = add_system(site, "mine.lab.test")
    person = visit()
    person.sign_in("alice")
    system_page = person.context.new_page()  # a second tab on the system page, reloaded after each step
    page = person.go("/reservations")
    page.get_by_label("System (fully qualified name)").fill(fqdn)
    page.locator("#take-duration").select_option("1h")
    page.locator("form.take").get_by_role("button", name="Take").click()
    row = page.locator(f"tr[data-system='{fqdn}']")
    expect(row.locator("td.left")).to_have_text("1h")
    (mine,) = site.api("alice").get("/reservations", params={"user": "me", "active": "true"}).json()
    system_page.goto(f"{site.url}/systems/{fqdn}")
    taken = shows_reservation_bar(system_page, mine["id"], mine["end"])
    row.get_by_role("button", name="Extend +4h").click()
    expect(page.get_by_role("status")).to_contain_text("now ends")
    expect(page.locator(f"tr[data-system='{fqdn}'] td.left")).to_have_text("5h")
    after = site.api("alice").get(f"/reservations/{mine['id']}").json()["end"]
    assert hours_between(mine["end"], after) == 4
    system_page.reload()
    assert shows_reservation_bar(system_page, mine["id"], after) > taken
    person.check("reservations")
    page.locator(f"tr[data-system='{fqdn}']").get_by_role("button", name="Return").click()
    expect(page.locator(f"tr[data-system='{fqdn}']")).to_have_count(0)
    returned = site.api("alice").get(f"/reservations/{mine['id']}").json()
    assert returned["state"] == "returned" and returned["end"] < mine["end"]
    system_page.reload()
    assert shows_reservation_bar(system_page, mine["id"], returned["end"]) < taken
    person.only_loopback()


def test_a_disabled_action_shows_its_reason_and_others_private_data_stays_hidden(visit, site):
    fqdn = add_system(site, "busy.lab.test")
    held = site.api("bob").post("/reservations", json={"system": fqdn, "duration": "2h"}).json()
    person = visit()
    person.sign_in("alice")
    page = person.go(f"/systems/{fqdn}")
    button = page.locator(".action button")
    expect(button).to_be_disabled()
    expect(page.locator("#action-reason")).to_contain_text("reserved by bob until")
    person.check("system-disabled")
    page = person.go("/reservations")
    expect(page.locator(f"tr[data-system='{fqdn}']")).to_have_count(0)  # bob's reservation is not in alice's list
    assert f"/reservations/{held['id']}/" not in page.content()


def test_a_forged_post_is_refused(visit, site):
    fqdn = add_system(site, "forged.lab.test")
    person = visit()
    person.sign_in("alice")
    # The browser's own cookies, a form post without the page's token (as another site's form would send)
    forged = person.context.request.post(f"{site.url}/systems/{fqdn}/take", form={"duration": "1h"},
                                         max_redirects=0)
    assert forged.status == 403 and "was not sent from lablease" in forged.text()
    wrong = person.context.request.post(f"{site.url}/systems/{fqdn}/take", form={"duration": "1h", "csrf": "0" * 64},
                                        max_redirects=0)
    assert wrong.status == 403
    assert site.admin.get(f"/systems/{fqdn}").json()["reservation"] is None


def test_the_pages_work_with_javascript_off(visit, site):
    fqdn = add_system(site, "nojs.lab.test")
    person = visit(javascript=False)
    page = person.sign_in("alice", PASSWORD)
    expect(page).to_have_url(site.url + "/systems")
    page = person.go(f"/systems/{fqdn}")
    page.get_by_role("button", name="Take").click()
    expect(page.locator("[data-holder]")).to_have_text("alice")
    page.get_by_role("button", name="Return").click()
    expect(page.locator("[data-holder]")).to_have_text("nobody: free")
    page = person.go("/systems?group=condition")
    expect(page.locator("th[scope='rowgroup']").first).to_have_text("manual")
    # every page, JavaScript off: each answers 200 with its heading (and its forms above worked without a script)
    site.admin.post("/pools", json={"name": "nojs"})
    site.admin.post("/pools/nojs/systems", json={"fqdn": fqdn})
    site.admin.post("/systems", json={"fqdn": "nojs-auto.lab.test", "arch": "s390x", "condition": "automated"})
    job = site.api("alice").post("/jobs", json={"recipe_sets": [{"recipes": [{"host_requires": {
        "field": "arch", "op": "=", "value": "s390x"}}]}]}).json()  # (one no system could run is refused)
    pages = [path for _, path in NAV] + [f"/systems/{fqdn}", "/pools/nojs?span=1d", f"/jobs/{job['id']}",
                                         "/utilisation?per=hour&period=1d"]
    for path in pages:
        response = page.goto(site.url + path)
        assert response.status == 200, path
        expect(page.locator("main h1")).to_be_visible()
    export = person.context.request.get(site.url + "/utilisation.csv?period=1d")  # a download: the same cookies
    assert export.status == 200 and export.headers["content-type"].startswith("text/csv")
    assert export.text().splitlines()[0].startswith("start,systems,")


def test_a_request_header_never_names_the_user_even_with_remote_user_trusted(site):
    """REMOTE_USER is a WSGI variable a front server sets; a client's header (REMOTE_USER, Remote-User) is not it."""
    import requests

    for header in ("REMOTE_USER", "Remote-User"):
        page = requests.get(site.url + "/reservations", headers={header: "alice"}, allow_redirects=False, timeout=30)
        assert page.status_code == 303 and page.headers["Location"].startswith("/login"), header
