"""The systems list, a system's page with its one action, my reservations and the calendar feed."""
import re

from icalendar import Calendar


def rows(html: str) -> list[str]:
    return re.findall(r'<tr data-fqdn="([^"]+)"', html)


def header(html: str) -> str:
    return re.search(r'<p class="pressure[^"]*"[^>]*>\s*(.*?)</p>', html, re.S).group(1).strip()


def test_the_systems_list_counts_filters_groups_and_pages(web, person):
    for n in range(3):
        web.system(f"s{n}.lab.test", lab="brno" if n else "boston")
    web.system("broken.lab.test", condition="broken")
    web.bob.post("/reservations", {"system": "s1.lab.test", "duration": "2h"})
    alice = person("alice")
    html = alice.page("/systems")
    assert rows(html) == ["broken.lab.test", "s0.lab.test", "s1.lab.test", "s2.lab.test"]
    assert header(html) == "2 of 4 available · 0 queued" and 'class="pressure"' in html
    assert "bob" in html and "since" in html
    assert rows(alice.page("/systems?lab=brno")) == ["s1.lab.test", "s2.lab.test"]
    assert rows(alice.page("/systems?condition=broken")) == ["broken.lab.test"]
    assert rows(alice.page("/systems?free_until=2026-11-22T13:00")) == ["broken.lab.test", "s0.lab.test",
                                                                            "s2.lab.test"]
    grouped = alice.page("/systems?group=holder")
    assert re.findall(r'scope="rowgroup">([^<]+)<', grouped) == ["(free)", "bob"]
    assert rows(grouped) == ["broken.lab.test", "s0.lab.test", "s2.lab.test", "s1.lab.test"]
    # a job waiting for its only Automated system, which then breaks (one no system could ever run is refused
    # at submit): more queued than available turns the header red
    web.admin.patch("/systems/broken.lab.test", {"condition": "automated"})
    assert web.admin.post("/reservations", {"system": "broken.lab.test", "duration": "2h"})[0] == 201
    assert web.alice.post("/jobs", {"recipe_sets": [{"recipes": [{}]}]})[0] == 201
    web.admin.patch("/systems/broken.lab.test", {"condition": "broken"})
    web.admin.patch("/systems/s0.lab.test", {"condition": "broken"})
    web.admin.patch("/systems/s2.lab.test", {"condition": "broken"})
    html = alice.page("/systems")
    assert header(html) == "0 of 4 available · 1 queued" and 'class="pressure over"' in html
    bad = alice.get("/systems?free_until=tomorrowish")
    assert bad.status_code == 422 and "free_until" in bad.get_data(as_text=True)


def test_the_list_is_paged(web, person):
    for n in range(101):
        web.system(f"p{n:03}.lab.test")
    alice = person("alice")
    first = alice.page("/systems")
    assert len(rows(first)) == 100 and "Page 1 of 2" in first and 'rel="next"' in first
    second = alice.page("/systems?page=2")
    assert rows(second) == ["p100.lab.test"] and 'rel="prev"' in second


def action(html: str) -> tuple[str, str]:
    found = re.search(r'data-action="(\w+)" data-enabled="(\w+)"', html)
    return found.group(1), found.group(2)


def test_take_extend_and_return_from_the_system_page(web, person):
    web.system("s1.lab.test")
    alice = person("alice")
    html = alice.page("/systems/s1.lab.test")
    assert action(html) == ("take", "yes") and "0 queued recipes could use it" in html
    html = alice.follow(alice.post("/systems/s1.lab.test/take", {"duration": "4h", "back": "/systems/s1.lab.test"}))
    assert action(html) == ("extend", "yes") and "You hold s1.lab.test until 2026-11-22 16:00 UTC" in html
    (mine,) = web.alice.get("/reservations", user="me")[1]
    html = alice.follow(alice.post(f"/reservations/{mine['id']}/extend", {"by": "1h", "back": "/systems/s1.lab.test"}))
    assert "now ends 2026-11-22 17:00 UTC" in html and web.alice.get(f"/reservations/{mine['id']}")[1]["end"] == \
        "2026-11-22T17:00:00Z"
    html = alice.follow(alice.post(f"/reservations/{mine['id']}/return", {"back": "/systems/s1.lab.test"}))
    assert "s1.lab.test is returned" in html and action(html) == ("take", "yes")
    assert web.alice.get(f"/reservations/{mine['id']}")[1]["state"] == "returned"


def test_a_disabled_action_says_why(web, person):
    web.system("held.lab.test")
    web.system("broken.lab.test", condition="broken")
    web.bob.post("/reservations", {"system": "held.lab.test", "duration": "2h"})
    alice = person("alice")
    html = alice.page("/systems/held.lab.test")
    assert action(html) == ("take", "no") and "reserved by bob until 2026-11-22 14:00 UTC" in html
    assert "<button type=\"button\" disabled" in html
    html = alice.page("/systems/broken.lab.test")
    assert action(html) == ("take", "no") and "the system is broken" in html


def test_borrow_and_return_a_loan(web, person):
    web.system("auto.lab.test", condition="automated")
    web.admin.post("/systems/auto.lab.test/access-policy/rules", {"permission": "loan_self", "user": "alice"})
    alice = person("alice")
    assert action(alice.page("/systems/auto.lab.test")) == ("borrow", "yes")
    html = alice.follow(alice.post("/systems/auto.lab.test/borrow", {"back": "/systems/auto.lab.test"}))
    assert "is lent to you until 2026-11-29 12:00 UTC" in html and action(html) == ("take", "yes")
    assert "Return loan" in alice.page("/reservations")
    html = alice.follow(alice.post("/systems/auto.lab.test/return-loan", {"back": "/systems/auto.lab.test"}))
    assert "The loan is returned." in html and web.admin.get("/systems/auto.lab.test/loan")[0] == 404


def test_my_reservations_shows_mine_only_and_refuses_acting_on_anothers(web, person):
    web.system("a.lab.test")
    web.system("b.lab.test")
    _, bobs = web.bob.post("/reservations", {"system": "b.lab.test", "duration": "2h", "heartbeat": "10m"})
    alice = person("alice")
    html = alice.follow(alice.post("/reservations", {"system": "a.lab.test", "duration": "1h"}))
    assert re.findall(r'data-system="([^"]+)"', html) == ["a.lab.test"]
    assert "b.lab.test" not in html
    bob_page = person("bob").page("/reservations")
    assert "every 10m; last" in bob_page
    refused = alice.follow(alice.post(f"/reservations/{bobs['id']}/return", {"back": "/reservations"}))
    assert "belongs to another user" in refused
    assert web.bob.get(f"/reservations/{bobs['id']}")[1]["state"] == "active"
    html = alice.page("/systems/b.lab.test")
    assert action(html) == ("take", "no") and f"/reservations/{bobs['id']}/" not in html
    assert alice.get("/systems/nothing.lab.test").status_code == 404


def test_the_calendar_feed_at_a_secret_rotatable_address(web, person):
    web.system("a.lab.test")
    alice = person("alice")
    alice.post("/reservations", {"system": "a.lab.test", "duration": "4h"})
    assert "You have no calendar address yet." in alice.page("/reservations")
    html = alice.follow(alice.post("/calendar/rotate"))
    url = re.search(r'class="calendar-url" href="([^"]+)"', html).group(1)
    assert url.startswith("http://localhost/calendar/alice/cal_")
    path = url.removeprefix("http://localhost")
    feed = person("bob", signed_in=False).get(path)  # no sign-in needed: the address is the key
    assert feed.status_code == 200 and feed.mimetype == "text/calendar"
    (event,) = Calendar.from_ical(feed.data).walk("VEVENT")
    assert str(event["SUMMARY"]) == "Reserved a.lab.test" and event.decoded("DTEND").isoformat() == \
        "2026-11-22T16:00:00+00:00"
    alice.follow(alice.post("/calendar/rotate"))
    assert alice.get(path).status_code == 401  # the old address opens nothing
    assert alice.get(path.replace("/alice/", "/bob/")).status_code == 401


def test_a_system_the_person_may_not_view_is_neither_listed_nor_shown(web, person):
    web.system("open.lab.test")
    web.system("secret.lab.test")
    assert web.admin.put("/systems/secret.lab.test/access-policy", {"rules": []})[0] == 200
    alice = person("alice")
    assert rows(alice.page("/systems")) == ["open.lab.test"]
    assert header(alice.page("/systems")) == "1 of 1 available · 0 queued"
    assert alice.get("/systems/secret.lab.test").status_code == 404
    assert rows(person("admin").page("/systems")) == ["open.lab.test", "secret.lab.test"]



def test_who_sees_which_system_in_the_list_its_counts_groups_and_a_pool_timeline(web, person):
    """Visibility as the API decides it, for each way a view is granted: to the person, to a group they are in,
    through the policy of a pool the system uses, by owning the system; and refused otherwise."""
    web.alice.post("/groups", {"name": "qe"})
    web.bob.post("/groups", {"name": "ops"})
    web.admin.post("/pools", {"name": "everything"})
    granted = {"foruser": [{"permission": "view", "user": "alice"}], "forgroup": [{"permission": "view", "group": "qe"}],
               "otherteam": [{"permission": "view", "group": "ops"}], "hidden": [], "mine": []}
    for name in (*granted, "pooled", "unpooled"):
        web.system(f"{name}.lab.test")
        web.admin.post("/pools/everything/systems", {"fqdn": f"{name}.lab.test"})
    for name, rules in granted.items():
        assert web.admin.put(f"/systems/{name}.lab.test/access-policy", {"rules": rules})[0] == 200
    assert web.admin.patch("/systems/mine.lab.test", {"owner": "alice"})[0] == 200
    for pool, system, rules in (("gpu", "pooled", [{"permission": "view", "group": "qe"}]),
                                ("locked", "unpooled", [])):  # unpooled's own rules let everybody view: unused
        web.admin.post("/pools", {"name": pool})
        web.admin.post(f"/pools/{pool}/systems", {"fqdn": f"{system}.lab.test"})
        for rule in rules:
            assert web.admin.post(f"/pools/{pool}/access-policy/rules", rule)[0] == 201
        assert web.admin.put(f"/systems/{system}.lab.test/access-policy", {"use_pool_policy": pool})[0] == 200
    alice, bob = person("alice"), person("bob")
    hers = ["forgroup.lab.test", "foruser.lab.test", "mine.lab.test", "pooled.lab.test"]
    assert rows(alice.page("/systems")) == hers
    assert header(alice.page("/systems")) == "4 of 4 available · 0 queued"
    assert rows(alice.page("/systems?group=condition")) == hers
    timeline = alice.page("/pools/everything?span=1d")
    assert re.findall(r'<g class="row" data-system="([^"]+)">', timeline) == hers and "4 systems" in timeline
    assert rows(bob.page("/systems")) == ["otherteam.lab.test"]
    assert header(bob.page("/systems")) == "1 of 1 available · 0 queued"
    assert len(rows(person("admin").page("/systems?pool=everything"))) == 7

def test_a_system_page_counts_the_queued_recipes_that_could_use_it(web, person):
    web.system("auto.lab.test", condition="automated")
    web.system("arm.lab.test", condition="automated", arch="aarch64")
    for fqdn in ("auto.lab.test", "arm.lab.test"):  # both busy: the recipes below wait
        assert web.admin.post("/reservations", {"system": fqdn, "duration": "2h"})[0] == 201
    x86 = {"host_requires": {"field": "arch", "op": "=", "value": "x86_64"}}
    for recipe in (x86, x86, {}):
        assert web.alice.post("/jobs", {"recipe_sets": [{"recipes": [recipe]}]})[0] == 201
    alice = person("alice")
    assert "3 queued recipes could use it" in alice.page("/systems/auto.lab.test")
    assert "1 queued recipe could use it" in alice.page("/systems/arm.lab.test")


def test_filters_by_pool_and_arch_group_by_pool_and_a_system_page_says_what_it_is(web, person):
    web.system("x1.lab.test", cpus=4, memory_mb=8192)
    web.system("arm.lab.test", arch="aarch64")
    web.admin.post("/pools", {"name": "rack"})
    web.admin.post("/pools/rack/systems", {"fqdn": "x1.lab.test"})
    alice = person("alice")
    assert rows(alice.page("/systems?pool=rack")) == ["x1.lab.test"]
    assert rows(alice.page("/systems?arch=aarch64")) == ["arm.lab.test"]
    grouped = alice.page("/systems?group=pool")
    assert "rack" in re.findall(r'scope="rowgroup">([^<]+)<', grouped)
    html = alice.page("/systems/x1.lab.test")
    facts = dict(re.findall(r"<dt>([^<]+)</dt><dd>(.*?)</dd>", html, re.S))
    assert facts["CPUs · memory"] == "4 · 8192 MB" and facts["Pools"] == "rack" and facts["Power control"] == "no"
    assert facts["Recent recipes aborted"] == "no finished recipe yet" and "since" in facts["Condition"]
    assert facts["Health check"].startswith('<span class="health-unknown">unknown</span> <span class="since">since')


def test_the_calendar_feed_holds_my_loans_too(web, person):
    web.system("auto.lab.test", condition="automated")
    web.admin.post("/systems/auto.lab.test/loan", {"recipient": "alice", "duration": "2d"})
    alice = person("alice")
    html = alice.follow(alice.post("/calendar/rotate"))
    path = re.search(r'class="calendar-url" href="([^"]+)"', html).group(1).removeprefix("http://localhost")
    (event,) = Calendar.from_ical(alice.get(path).data).walk("VEVENT")
    assert str(event["SUMMARY"]) == "Loan of auto.lab.test" and event.decoded("DTEND").isoformat() == \
        "2026-11-24T12:00:00+00:00"


def test_every_page_and_form_action_is_also_an_api_route_and_a_command_line():
    """Item 11: no page-only feature. Every page and form action the pages offer (PAGES: each form posts to one)
    names the API route that does the same, and the `lablease` command line that does it parses."""
    import shlex

    from lablease.api.routes import ROUTES
    from lablease.cli.client_parser import build_parser
    from lablease.web.pages import EQUIVALENTS, PAGES, SESSION_ONLY

    offered = {page.endpoint for page in PAGES}
    assert offered - set(SESSION_ONLY) == set(EQUIVALENTS)
    routes = {route.endpoint for route in ROUTES}
    parser = build_parser()
    for endpoint, (api, command) in EQUIVALENTS.items():
        assert api in routes, endpoint
        method = endpoint.split()[0]
        if method == "POST":  # an action: the command line does it too
            assert command is not None, endpoint
        if command is not None:
            parsed = parser.parse_args(shlex.split(command))
            assert parsed.command == command.split()[0], endpoint
