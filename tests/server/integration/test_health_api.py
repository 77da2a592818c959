"""Health checks through the API and the worker's due step (docs/health.md): a check runs as a job on the
system, a failure makes it Broken and tells its owner, a pass makes it good; healthy_within gates hand-over."""
import pytest

from lablease.config import Settings
from lablease.services.lifecycle import health
from lablease.services.messages import outbox
from lablease.store.uow import UnitOfWork
from lablease.worker.loop import run_step
from tests.server.integration.conftest import Lab
from tests.server.integration.test_provisioning_api import TREE, _token_for, provisionable

SMOKE = {"recipe_sets": [{"recipes": [{"tasks": [{"name": "/health/smoke"}]}]}]}


@pytest.fixture
def lab(db, tmp_path):
    lab = Lab(db, Settings(data_dir=str(tmp_path / "data"), smtp_host="127.0.0.1"))
    lab.alice.patch("/me", {"email": "alice@lab.test"})
    return lab


def automated(lab, fqdn, owner="alice"):
    return lab.system(fqdn, condition="automated", owner=owner)


def run_checks(lab):
    """One pass of the worker's health step: submits every check that is due now."""
    return run_step(lab.db, lab.settings, health.DUE, lab.clock())


def health_of(lab, fqdn):
    status, body = lab.admin.get(f"/systems/{fqdn}")
    assert status == 200, body
    return body["condition"], body["health"]


def finish(lab, recipe_id, result, tasks=()):
    status, body = lab.admin.patch(f"/recipes/{recipe_id}", {"status": "completed", "result": result,
                                                             "tasks": list(tasks)})
    assert status == 200, body


def notices(lab, event):
    with UnitOfWork(lab.db) as uow:
        return [n for n in outbox.listing(uow) if n["event"] == event]


def test_a_failed_check_breaks_the_system_and_tells_its_owner_a_passing_one_makes_it_good(lab):
    automated(lab, "a.lab.test")
    assert lab.admin.post("/health-checks", {"name": "smoke", "arch": "x86_64", "job": SMOKE,
                                             "after_recipes": 2})[0] == 201
    assert health_of(lab, "a.lab.test") == ("automated", {
        "state": "unknown", "since": "2026-11-22T12:00:00Z", "result": None, "last_check": None,
        "passed_at": None, "check": None, "recipe": None, "next_check": None})
    status, asked = lab.bob.post("/systems/a.lab.test/health-check")
    assert status == 202 and asked["next_check"] == "2026-11-22T12:00:00Z", asked
    assert len(run_checks(lab)) == 1
    _, checking = health_of(lab, "a.lab.test")
    assert checking["state"] == "checking" and checking["check"] == "smoke"
    status, recipe = lab.admin.get(f"/recipes/{checking['recipe']}")
    assert recipe["status"] == "running" and recipe["system"] == "a.lab.test"  # placed on it, like any recipe

    lab.clock.advance(minutes=10)
    finish(lab, recipe["id"], "fail", [{"name": "/health/smoke", "result": "fail"}])
    condition, bad = health_of(lab, "a.lab.test")
    assert condition == "broken" and bad["state"] == "bad" and bad["since"] == "2026-11-22T12:10:00Z"
    assert bad["result"] == "health check smoke completed with result fail (failing tasks: /health/smoke)"
    [told] = notices(lab, "system.health_failed")
    assert told["destination"] == "alice@lab.test" and "health check failed" in told["subject"]
    _, log = lab.admin.get("/systems/a.lab.test/activity")
    assert any(e["action"] == "broken" for e in log)

    # Back from broken: checked at once, before anyone gets it; a pass makes it good.
    assert lab.admin.patch("/systems/a.lab.test", {"condition": "automated"})[0] == 200
    assert health_of(lab, "a.lab.test")[1]["next_check"] == "2026-11-22T12:10:00Z"
    assert len(run_checks(lab)) == 1
    lab.clock.advance(minutes=5)
    finish(lab, health_of(lab, "a.lab.test")[1]["recipe"], "pass")
    condition, good = health_of(lab, "a.lab.test")
    assert condition == "automated" and good["state"] == "good"
    assert good["passed_at"] == good["last_check"] == "2026-11-22T12:15:00Z"
    assert [s["fqdn"] for s in lab.admin.get("/systems", health="good")[1]] == ["a.lab.test"]
    assert lab.admin.get("/systems", health="bad")[1] == []
    for wrong in ("", "fine"):  # the description names the four states: nothing else is a filter
        status, problem = lab.admin.get("/systems", health=wrong)
        assert status == 422 and problem["field"] == "health" and "good" in problem["detail"], problem


def test_a_check_is_due_after_n_recipes_and_after_a_failed_install(lab):
    automated(lab, "a.lab.test")
    lab.admin.post("/health-checks", {"name": "smoke", "system": "a.lab.test", "job": SMOKE, "after_recipes": 2})
    for n in range(2):
        assert run_checks(lab) == []
        _, job = lab.bob.post("/jobs", {"recipe_sets": [{"recipes": [{}]}]})
        finish(lab, job["recipe_sets"][0]["recipes"][0]["id"], "pass")
    assert health_of(lab, "a.lab.test")[1]["next_check"] == "2026-11-22T12:00:00Z"
    assert len(run_checks(lab)) == 1
    assert health_of(lab, "a.lab.test")[1]["state"] == "checking"

    # A failed install: the system is checked again at once, whatever the cadence says.
    provisionable(lab, condition="automated")
    lab.admin.post("/distro-trees", TREE)
    lab.admin.post("/health-checks", {"name": "p1", "system": "p1.lab.test", "job": SMOKE, "after_recipes": 100})
    lab.clock.advance(minutes=3)
    lab.bob.post("/jobs", {"recipe_sets": [{"recipes": [
        {"distro_requires": {"field": "distro_name", "op": "=", "value": "Fedora-40"}}]}]})
    assert health_of(lab, "p1.lab.test")[1]["next_check"] is None
    _, [install] = lab.admin.get("/systems/p1.lab.test/installations")
    token = _token_for(lab, install["id"])
    assert lab.client.post(f"/api/v1/installations/{install['id']}/install_fail?token={token}").status_code == 204
    condition, after_fail = health_of(lab, "p1.lab.test")
    assert (condition, after_fail["state"], after_fail["next_check"]) == ("automated", "unknown", "2026-11-22T12:03:00Z")


def test_defining_checks_is_for_admins_and_bad_definitions_are_refused(lab):
    lab.system("m.lab.test")
    assert lab.alice.post("/health-checks", {"name": "x", "arch": "x86_64", "job": SMOKE})[0] == 403
    two = {"recipe_sets": [{"recipes": [{}, {}]}]}
    for body, field in [({"name": "x", "arch": "x86_64", "job": two}, "job"),
                        ({"name": "x", "arch": "x86_64", "job": {"recipe_sets": [{"recipes": [
                            {"force": "m.lab.test"}]}]}}, "job"),
                        ({"name": "x", "pool": "nope", "job": SMOKE}, "pool"),
                        ({"name": "x", "arch": "x86_64", "job": SMOKE, "every": "0s"}, "every"),
                        ({"name": "x", "arch": "x86_64", "pool": "p", "job": SMOKE}, "system, pool or arch")]:
        status, problem = lab.admin.post("/health-checks", body)
        assert status == 422 and field in problem["detail"], (body, problem)
    xml = ('<job><recipeSet><recipe><distroRequires/><hostRequires/><task name="/smoke"/></recipe>'
           '</recipeSet></job>')
    status, created = lab.admin.post("/health-checks", {"name": "x", "arch": "x86_64", "job": xml, "every": "24h"})
    assert status == 201 and created["every"] == 86400 and created["job"]["recipe_sets"][0]["recipes"][0][
        "tasks"][0]["name"] == "/smoke", created
    assert lab.admin.post("/health-checks", {"name": "y", "arch": "x86_64", "job": SMOKE})[0] == 409
    assert lab.admin.patch("/health-checks/x", {"after_recipes": 3})[1]["after_recipes"] == 3
    assert [c["name"] for c in lab.alice.get("/health-checks")[1]] == ["x"]
    assert lab.admin.delete("/health-checks/x")[0] == 204
    assert lab.admin.get("/health-checks/x")[0] == 404
    # a Manual system gets no check
    assert lab.admin.post("/systems/m.lab.test/health-check")[0] == 409


def test_a_recipe_needing_recent_health_gets_a_checked_system_and_moves_on_when_a_check_fails(lab):
    automated(lab, "a.lab.test")
    automated(lab, "b.lab.test")
    lab.admin.post("/health-checks", {"name": "smoke", "arch": "x86_64", "job": SMOKE})
    _, job = lab.bob.post("/jobs", {"recipe_sets": [{"recipes": [{"healthy_within": "24h"}]}]})
    recipe = job["recipe_sets"][0]["recipes"][0]
    assert recipe["status"] == "queued"  # no system passed a check yet: one is checked first
    assert lab.bob.get(f"/recipes/{recipe['id']}")[1]["why"]["message"] == (
        "waiting for a health check passed within 1d: checking a.lab.test first")
    assert [health_of(lab, f)[1]["next_check"] for f in ("a.lab.test", "b.lab.test")] == [
        "2026-11-22T12:00:00Z", None]
    run_checks(lab)
    finish(lab, health_of(lab, "a.lab.test")[1]["recipe"], "fail")  # a fails: b is checked next
    assert health_of(lab, "a.lab.test")[0] == "broken"
    assert lab.bob.get(f"/recipes/{recipe['id']}")[1]["status"] == "queued"
    run_checks(lab)
    finish(lab, health_of(lab, "b.lab.test")[1]["recipe"], "pass")
    status, placed = lab.bob.get(f"/recipes/{recipe['id']}")
    assert placed["status"] == "running" and placed["system"] == "b.lab.test", placed
    # a second such recipe takes b as it is (its pass is recent) once the first is done
    finish(lab, recipe["id"], "pass")
    _, again = lab.bob.post("/jobs", {"recipe_sets": [{"recipes": [{"healthy_within": "24h"}]}]})
    assert again["recipe_sets"][0]["recipes"][0]["system"] == "b.lab.test"


def test_reserving_a_named_system_with_healthy_within_needs_a_recent_pass(lab):
    automated(lab, "a.lab.test")
    lab.admin.post("/health-checks", {"name": "smoke", "system": "a.lab.test", "job": SMOKE})
    status, problem = lab.admin.post("/reservations", {"system": "a.lab.test", "healthy_within": "24h"})
    assert status == 409 and "no passing health check within the last 1d" in problem["detail"], problem
    assert "lablease system check a.lab.test" in problem["detail"]
    lab.admin.post("/systems/a.lab.test/health-check")
    run_checks(lab)
    assert "a check is queued or running" in lab.admin.post(
        "/reservations", {"system": "a.lab.test", "healthy_within": "24h"})[1]["detail"]
    finish(lab, health_of(lab, "a.lab.test")[1]["recipe"], "pass")
    lab.clock.advance(hours=23)
    status, reservation = lab.admin.post("/reservations", {"system": "a.lab.test", "healthy_within": "24h",
                                                           "duration": "1h"})
    assert status == 201, reservation
    lab.admin.delete(f"/reservations/{reservation['id']}")
    lab.clock.advance(hours=2)  # the pass is 25h old now
    assert lab.admin.post("/reservations", {"system": "a.lab.test", "healthy_within": "24h"})[0] == 409


def test_a_reservation_waiting_for_recent_health_is_granted_the_next_system_when_a_check_fails(lab):
    """healthy_within on a wait by pool: a is checked first and fails, so b is checked and, passing, granted."""
    for fqdn in ("a.lab.test", "b.lab.test"):
        automated(lab, fqdn)
    lab.admin.post("/pools", {"name": "hw"})
    for fqdn in ("a.lab.test", "b.lab.test"):
        assert lab.admin.post("/pools/hw/systems", {"fqdn": fqdn})[0] == 200
    lab.admin.post("/health-checks", {"name": "smoke", "arch": "x86_64", "job": SMOKE})
    status, waiting = lab.alice.post("/reservations", {"wait": True, "pools": ["hw"], "healthy_within": "24h",
                                                       "duration": "2h"})
    assert status == 202 and waiting["state"] == "waiting" and waiting["position"] == 1, waiting
    assert [health_of(lab, f)[1]["next_check"] for f in ("a.lab.test", "b.lab.test")] == [
        "2026-11-22T12:00:00Z", None]  # one check at a time
    run_checks(lab)
    lab.clock.advance(minutes=10)
    finish(lab, health_of(lab, "a.lab.test")[1]["recipe"], "fail")
    assert health_of(lab, "a.lab.test")[0] == "broken"
    assert lab.alice.get(f"/reservations/{waiting['id']}")[1]["state"] == "waiting"
    assert health_of(lab, "b.lab.test")[1]["next_check"] == "2026-11-22T12:10:00Z"  # the next candidate
    run_checks(lab)
    lab.clock.advance(minutes=5)
    finish(lab, health_of(lab, "b.lab.test")[1]["recipe"], "pass")
    status, granted = lab.alice.get(f"/reservations/{waiting['id']}")
    assert status == 200 and granted["state"] == "active" and granted["system"] == "b.lab.test", granted
    assert granted["start"] == "2026-11-22T12:15:00Z" and granted["end"] == "2026-11-22T14:15:00Z"
