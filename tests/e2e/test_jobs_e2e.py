"""Jobs end to end: a real server process, job XML over HTTP, scheduling, results, reservesys."""
import time

JOB = """<job>
  <whiteboard>e2e</whiteboard>
  <recipeSet priority="Normal">
    <recipe whiteboard="one"><hostRequires><arch op="=" value="x86_64"/></hostRequires>
      <reservesys when="onfail" duration="1h"/></recipe>
    <recipe whiteboard="two"><hostRequires><arch op="=" value="x86_64"/></hostRequires></recipe>
  </recipeSet>
</job>"""


def submit(api, body: str):
    return api.post("/jobs", data=body.encode(), headers={"Content-Type": "application/xml"})


def recipes(job):
    return [r for rs in job["recipe_sets"] for r in rs["recipes"]]


def test_a_two_host_job_runs_queues_and_keeps_a_failed_system(live_server):
    alice, bob = live_server.add_users("alice", "bob", then=tuple(
        ("system", "add", name, "--arch", "x86_64", "--condition", "automated") for name in ("a.lab.test", "b.lab.test")))
    first = submit(alice, JOB)
    assert first.status_code == 201, first.text
    one, two = recipes(first.json())
    assert {one["status"], two["status"]} == {"running"} and {one["system"], two["system"]} == {"a.lab.test",
                                                                                                 "b.lab.test"}
    second = submit(bob, JOB).json()
    assert [r["status"] for r in recipes(second)] == ["queued", "queued"]
    why = bob.get(f"/recipes/{recipes(second)[0]['id']}").json()["why"]
    assert why["candidates"] == 2 and len(why["busy"]) == 2

    assert alice.patch(f"/recipes/{two['id']}", json={"status": "completed", "result": "pass"}).status_code == 200
    assert alice.patch(f"/recipes/{one['id']}", json={"status": "completed", "result": "fail"}).status_code == 200
    job = alice.get(f"/jobs/{first.json()['id']}").json()
    assert job["status"] == "completed" and job["result"] == "fail"
    # reservesys onfail kept recipe one's system for alice; bob's set now holds the other and waits
    kept = alice.get(f"/systems/{one['system']}").json()["reservation"]
    assert kept["user"] == "alice"
    states = sorted(bob.get(f"/recipes/{r['id']}").json()["status"] for r in recipes(second))
    assert states == ["assigned", "queued"]
    assert alice.delete(f"/reservations/{kept['id']}").status_code == 204
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        job = bob.get(f"/jobs/{second['id']}").json()
        if job["status"] == "running":
            break
        time.sleep(0.1)
    assert [r["status"] for r in recipes(job)] == ["running", "running"]


def test_the_watchdog_aborts_a_recipe_past_its_runtime_limit(live_server):
    live_server.admin_cli("system", "add", "w.lab.test", "--arch", "x86_64", "--condition", "automated")
    alice = live_server.add_user("alice")
    job = alice.post("/jobs", json={"recipe_sets": [{"recipes": [{"runtime_limit": 2}]}]}).json()
    [recipe] = recipes(job)
    assert recipe["status"] == "running"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and alice.get(f"/recipes/{recipe['id']}").json()["status"] == "running":
        time.sleep(0.2)
    final = alice.get(f"/recipes/{recipe['id']}").json()
    assert final["status"] == "aborted"
    assert alice.get("/systems/w.lab.test").json()["usage"] == "idle"
