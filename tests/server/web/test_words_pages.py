"""What a person reads on the pages: refusals in the form's words (never an API field name), only the actions that
can work, what stands in the way of this system, and its history in words."""
import re
from datetime import timedelta
from html import unescape

import pytest

from lablease.config import Settings
from lablease.services.lifecycle import health
from lablease.services.people import users
from lablease.store.uow import UnitOfWork
from lablease.worker.loop import run_step
from tests.server.integration.conftest import START, Lab, at

H = timedelta(hours=1)

SMOKE = {"recipe_sets": [{"recipes": [{"tasks": [{"name": "/health/smoke"}]}]}]}


@pytest.fixture
def web(db, tmp_path):
    lab = Lab(db, Settings(data_dir=str(tmp_path / "data"), allow_unlimited_reservations=True))
    lab.passwords = set()
    return lab


def flash(html: str) -> str:
    """The message a refused form action left on the page it went back to."""
    found = re.search(r'<[^>]*class="flash[^"]*"[^>]*>(.*?)</', html, re.S).group(1)
    return unescape(re.sub(r"<[^>]+>", "", found)).strip()


def history(html: str) -> list[str]:
    """The What column of the system page's history, newest first."""
    table = re.search(r'<table class="history">(.*?)</table>', html, re.S).group(1)
    return [re.sub(r"<[^>]+>", "", row[-1]).strip() for row in
            (re.findall(r"<td>(.*?)</td>", tr, re.S) for tr in re.findall(r"<tr>(.*?)</tr>", table, re.S)) if row]


def test_a_refusal_on_a_page_names_no_api_field(web, person):
    web.system("m1.lab.test")
    web.system("m2.lab.test")
    _, held = web.alice.post("/reservations", {"system": "m1.lab.test", "duration": "unlimited"})
    alice = person("alice")
    page = alice.page("/reservations")
    assert f"/reservations/{held['id']}/extend" not in page and "Return" in page  # no end: nothing to extend
    assert f"/reservations/{held['id']}/extend" not in alice.page("/systems/m1.lab.test")
    assert "no end: it lasts until you return it" in alice.page("/systems/m1.lab.test")
    # a stale page's Extend still gets a sentence, not "extend_by: ..."
    said = flash(alice.follow(alice.post(f"/reservations/{held['id']}/extend", {"by": "1h", "back": "/reservations"})))
    assert said == "the reservation has no end to extend"
    # a reason about the field the form filled in takes the form's word for it
    said = flash(alice.follow(alice.post("/reservations", {"system": "m2.lab.test", "duration": "0m",
                                                           "back": "/reservations"})))
    assert said == "The duration must be positive"


def test_a_system_page_says_what_stands_in_the_way_of_this_system(web, person):
    web.system("b1.lab.test", condition="broken")
    web.system("a1.lab.test", condition="automated")
    alice = person("alice")
    broken = alice.page("/systems/b1.lab.test")
    assert "the system is broken: it cannot be reserved until its owner or an administrator repairs it" in broken
    assert "Manual" not in broken
    automated = alice.page("/systems/a1.lab.test")
    assert ("the system is automated: the scheduler gives it to jobs, and only the user it is lent to may reserve "
            "it by hand") in automated


def test_a_system_history_reads_as_words(web, person):
    web.system("h1.lab.test", condition="automated", owner="admin")
    web.system("m1.lab.test")
    web.admin.post("/pools", {"name": "rack"})
    web.admin.post("/pools/rack/systems", {"fqdn": "m1.lab.test"})
    _, held = web.alice.post("/reservations", {"system": "m1.lab.test", "duration": "1h"})
    web.alice.delete(f"/reservations/{held['id']}")
    assert web.admin.post("/health-checks", {"name": "smoke", "system": "h1.lab.test", "job": SMOKE})[0] == 201
    web.bob.post("/systems/h1.lab.test/health-check")
    run_step(web.db, web.settings, health.DUE, web.clock())
    _, shown = web.admin.get("/systems/h1.lab.test")
    assert shown["reservation"]["user"] == "admin"  # the check's recipe holds it
    web.admin.patch(f"/recipes/{shown['health']['recipe']}", {"status": "completed", "result": "pass"})
    alice = person("alice")
    checked = history(alice.page("/systems/h1.lab.test"))
    job = re.search(r"job (\d+)", " ".join(checked)).group(1)
    assert checked[:4] + checked[-1:] == [f"reservation {shown['reservation']['id']} ended: recipe finished",
                                          "health check smoke passed", f"started health check smoke: job {job}",
                                          "health check requested", "added as automated"], checked
    assert history(alice.page("/systems/m1.lab.test")) == [
        f"reservation {held['id']} ended: returned", f"reserved: reservation {held['id']} until 2026-11-22 13:00 UTC",
        "added to pool rack", "added as manual"]


def test_a_page_that_can_force_says_so_in_its_own_words(web, person):
    web.system("a1.lab.test", condition="automated")
    with UnitOfWork(web.db) as uow:
        users.ensure_arusers(uow, START)
        uow.commit()
    web.admin.post("/groups/arusers/members", {"user": "alice"})
    _, ar = web.alice.post("/advance-reservations", {"start": at(START + 24 * H), "duration": "2h",
                                                     "hosts": ["a1.lab.test"]})
    web.alice.post("/jobs", {"recipe_sets": [{"ar": ar["id"], "recipes": [{"runtime_limit": 1800}]}]})
    alice = person("alice")
    alice.page(f"/advance-reservations/{ar['id']}")
    said = flash(alice.follow(alice.post(f"/advance-reservations/{ar['id']}/delete",
                                         {"back": f"/advance-reservations/{ar['id']}"})))
    assert said.endswith('delete with "also abort its jobs" ticked to abort it first'), said
    assert web.alice.get(f"/advance-reservations/{ar['id']}")[1]["state"] == "w"
