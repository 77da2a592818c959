"""Jobs over the API: XML and JSON submission, references checked, results rolled up."""
from datetime import timedelta

from lablease.domain.paging import PageRequest
from lablease.services.records import activity
from lablease.store.uow import UnitOfWork

from .conftest import START, at  # noqa: F401

JOB_XML = b"""<job>
  <whiteboard>nightly</whiteboard>
  <recipeSet priority="High">
    <recipe whiteboard="server">
      <autopick random="false"><pool>fast</pool></autopick>
      <hostRequires><and><arch op="=" value="x86_64"/><memory op="&gt;=" value="2048"/></and></hostRequires>
      <reservesys duration="3600" when="onfail"/>
      <task name="/distribution/check-install"/>
    </recipe>
    <recipe whiteboard="client">
      <hostRequires><key_value key="gpu" op="=" value="nvidia"/></hostRequires>
    </recipe>
  </recipeSet>
</job>"""


def setup_lab(lab):
    lab.system("a.lab.test", condition="automated", memory_mb=4096)
    lab.system("b.lab.test", condition="automated", attributes={"gpu": "nvidia"})
    lab.admin.post("/pools", {"name": "fast"})


def post_xml(lab, user, body):
    response = lab.client.post("/api/v1/jobs", data=body, content_type="application/xml",
                               headers={"Authorization": f"Bearer {lab.tokens[user]}"})
    return response.status_code, response.get_json()


def test_submit_xml_runs_a_two_host_set(lab):
    setup_lab(lab)
    status, job = post_xml(lab, "alice", JOB_XML)
    assert status == 201, job
    [recipe_set] = job["recipe_sets"]
    assert recipe_set["priority"] == "High" and job["whiteboard"] == "nightly"
    assert [(r["whiteboard"], r["status"], r["system"]) for r in recipe_set["recipes"]] == [
        ("server", "running", "a.lab.test"), ("client", "running", "b.lab.test")]
    server, client = recipe_set["recipes"]
    lab.alice.patch(f"/recipes/{client['id']}", {"status": "completed", "result": "pass"})
    status, body = lab.alice.patch(f"/recipes/{server['id']}", {
        "tasks": [{"name": "/distribution/check-install", "result": "fail"}], "status": "completed"})
    assert status == 200 and body["result"] == "fail"
    _, job = lab.alice.get(f"/jobs/{job['id']}")
    assert job["status"] == "completed" and job["result"] == "fail"
    _, system = lab.alice.get("/systems/a.lab.test")
    assert system["reservation"]["user"] == "alice"  # reservesys when=onfail kept it


def test_the_same_job_as_json(lab):
    setup_lab(lab)
    status, job = lab.bob.post("/jobs", {"recipe_sets": [{"recipes": [
        {"host_requires": {"field": "arch", "op": "=", "value": "x86_64"}}]}]})
    assert status == 201, job
    assert job["recipe_sets"][0]["recipes"][0]["system"] == "a.lab.test"


def test_unknown_names_are_refused_not_matched(lab):
    setup_lab(lab)
    cases = [
        ({"field": "pool", "op": "=", "value": "slow"}, "no pool named slow"),
        ({"field": "key_value", "key": "fpga", "op": "=", "value": "x"}, "no system has an attribute named fpga"),
    ]
    for host, reason in cases:
        status, problem = lab.alice.post("/jobs", {"recipe_sets": [{"recipes": [{"host_requires": host}]}]})
        assert status == 422 and reason in problem["detail"], problem
    status, problem = lab.alice.post("/jobs", {"recipe_sets": [{"recipes": [
        {"distro_requires": {"field": "distro_family", "op": "=", "value": "Fedora40"}}]}]})
    assert status == 422 and "no distro tree matches" in problem["detail"]
    status, problem = post_xml(lab, "alice", b"<job><recipeSet><recipe><hostRequires><colour value='red'/>"
                                             b"</hostRequires></recipe></recipeSet></job>")
    assert status == 422 and "colour" in problem["detail"]
    _, jobs = lab.admin.get("/jobs", mine="false")
    assert jobs == []  # nothing half-written


def test_hostile_xml_is_refused(lab):
    bomb = (b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;">]>'
            b'<job><whiteboard>&lol2;</whiteboard></job>')
    status, problem = post_xml(lab, "alice", bomb)
    assert status == 422 and "DOCTYPE" in problem["detail"]
    response = lab.client.post("/api/v1/jobs", data=b"recipe", content_type="text/plain",
                               headers={"Authorization": f"Bearer {lab.tokens['alice']}"})
    assert response.status_code == 415


def virtual(n: int) -> dict:
    """A virtual power driver and netboot MAC number n: each system has its own MAC."""
    return {"power": {"driver": "virtual"}, "netboot": {"mac": f"52:54:00:00:00:{n:02x}"}}


def test_distro_requires_waits_for_provisioning(lab):
    lab.system("a.lab.test", condition="automated", **virtual(1))
    lab.system("arm.lab.test", condition="automated", arch="aarch64", **virtual(2))
    status, tree = lab.admin.post("/distro-trees", {"name": "Fedora-40", "family": "Fedora40", "arch": "aarch64",
                                                    "url": "http://mirror/f40/", "kernel": "vmlinuz",
                                                    "initrd": "initrd.img"})
    assert status == 201
    status, job = lab.alice.post("/jobs", {"recipe_sets": [{"recipes": [
        {"distro_requires": {"field": "distro_family", "op": "=", "value": "Fedora40"}}]}]})
    assert status == 201, job
    recipe = job["recipe_sets"][0]["recipes"][0]
    assert recipe["status"] == "waiting" and recipe["system"] == "arm.lab.test"  # the arch the tree exists for
    assert recipe["distro_tree"] == tree["id"]
    _, installs = lab.alice.get("/systems/arm.lab.test/installations")
    assert [(i["recipe"], i["status"], i["distro_tree"]["name"]) for i in installs] == [
        (recipe["id"], "queued", "Fedora-40")]
    _, queued = lab.admin.get("/systems/arm.lab.test/commands")
    assert [c["action"] for c in reversed(queued)] == ["netboot_install", "reboot"]


def test_a_recipe_that_cannot_be_installed_is_aborted_saying_why(lab):
    lab.system("bare.lab.test", condition="automated")  # no power driver, no MAC
    lab.admin.post("/distro-trees", {"name": "Fedora-40", "family": "Fedora40", "arch": "x86_64",
                                     "url": "http://mirror/f40/", "kernel": "vmlinuz", "initrd": "initrd.img"})
    _, job = lab.alice.post("/jobs", {"recipe_sets": [{"recipes": [
        {"distro_requires": {"field": "distro_name", "op": "=", "value": "Fedora-40"}}]}]})
    recipe = job["recipe_sets"][0]["recipes"][0]
    assert recipe["status"] == "aborted"
    with UnitOfWork(lab.db, write=False) as uow:
        reasons = [e["new"] for e in activity.entries(uow, "recipe", recipe["id"], PageRequest()).items if e["field"] == "reason"]
    assert reasons == ["cannot provision bare.lab.test: bare.lab.test has no power driver configured, "
                       "so it cannot be provisioned"]


def test_others_cannot_see_or_finish_my_recipes(lab):
    setup_lab(lab)
    _, job = lab.alice.post("/jobs", {"recipe_sets": [{"recipes": [{}]}]})
    recipe_id = job["recipe_sets"][0]["recipes"][0]["id"]
    assert lab.bob.get(f"/jobs/{job['id']}")[0] == 404
    assert lab.bob.patch(f"/recipes/{recipe_id}", {"status": "aborted"})[0] == 404
    assert lab.bob.post(f"/jobs/{job['id']}/cancel")[0] == 404


def test_a_request_id_returns_the_unfinished_job_instead_of_queueing_it_twice(lab):
    setup_lab(lab)
    body = {"recipe_sets": [{"recipes": [{"host_requires": {"field": "arch", "op": "=", "value": "x86_64"}}]}]}
    response = lab.client.post("/api/v1/jobs?request_id=nightly-42", json=body,
                               headers={"Authorization": f"Bearer {lab.tokens['alice']}"})
    assert response.status_code == 201
    first = response.get_json()
    same_as_xml = (b'<job><recipeSet><recipe><hostRequires><arch op="=" value="x86_64"/></hostRequires>'
                   b'</recipe></recipeSet></job>')
    again = lab.client.post("/api/v1/jobs?request_id=nightly-42", data=same_as_xml, content_type="application/xml",
                            headers={"Authorization": f"Bearer {lab.tokens['alice']}"})
    assert again.status_code == 200 and again.get_json()["id"] == first["id"]
    _, found = lab.alice.get("/jobs", request_id="nightly-42")
    assert [j["id"] for j in found] == [first["id"]]
    # bob's request ids are his own
    other = lab.client.post("/api/v1/jobs?request_id=nightly-42", json=body,
                            headers={"Authorization": f"Bearer {lab.tokens['bob']}"})
    assert other.status_code == 201 and other.get_json()["id"] != first["id"]
    # once the job has finished, the id queues new work
    lab.alice.post(f"/jobs/{first['id']}/cancel")
    later = lab.client.post("/api/v1/jobs?request_id=nightly-42", json=body,
                            headers={"Authorization": f"Bearer {lab.tokens['alice']}"})
    assert later.status_code == 201 and later.get_json()["id"] != first["id"]


def test_a_request_id_with_a_different_job_is_refused_naming_what_differs(lab):
    setup_lab(lab)
    body = {"whiteboard": "nightly", "recipe_sets": [{"recipes": [
        {"host_requires": {"field": "arch", "op": "=", "value": "x86_64"}}]}]}
    assert lab.client.post("/api/v1/jobs?request_id=nightly-43", json=body,
                           headers={"Authorization": f"Bearer {lab.tokens['alice']}"}).status_code == 201
    changed = {"whiteboard": "nightly", "recipe_sets": [{"recipes": [
        {"host_requires": {"field": "arch", "op": "=", "value": "aarch64"}}]}]}
    response = lab.client.post("/api/v1/jobs?request_id=nightly-43", json=changed,
                               headers={"Authorization": f"Bearer {lab.tokens['alice']}"})
    problem = response.get_json()
    assert response.status_code == 409, problem
    assert "request_id 'nightly-43'" in problem["detail"]
    assert problem["differs"] == ["recipe_sets[0].recipes[0].host_requires.value"]
    response = lab.client.post("/api/v1/jobs?request_id=nightly-43", data=JOB_XML, content_type="application/xml",
                               headers={"Authorization": f"Bearer {lab.tokens['alice']}"})
    assert response.status_code == 409 and "recipe_sets[0].priority" in response.get_json()["differs"]
    _, jobs = lab.alice.get("/jobs")
    assert len(jobs) == 1  # nothing queued twice, nothing half-written


def _reservesys_job(duration: str) -> bytes:
    return (b'<job><recipeSet><recipe><hostRequires force="a.lab.test"/>'
            b'<reservesys duration="' + duration.encode() + b'"/></recipe></recipeSet></job>')


def test_reservesys_past_the_site_maximum_is_refused_at_submit(db, tmp_path):
    from lablease.config import Settings

    from .conftest import Lab

    lab = Lab(db, Settings(data_dir=str(tmp_path / "data"), max_reservation_duration="2d"))
    setup_lab(lab)
    for duration in ("10d", "999w"):  # ten days; the longest in weeks the grammar takes (19 years)
        status, problem = post_xml(lab, "alice", _reservesys_job(duration))
        assert status == 422, problem
        assert problem["field"] == "recipe_sets[0].recipes[0].reservesys.duration"
        assert "maximum reservation of 2d" in problem["detail"]
    _, jobs = lab.admin.get("/jobs", mine="false")
    assert jobs == []  # nothing half-written
    status, job = post_xml(lab, "alice", _reservesys_job("2d"))
    assert status == 201, job


def test_reservesys_is_kept_within_the_maximum_the_site_has_when_the_recipe_ends(db, tmp_path):
    from dataclasses import replace

    from lablease.config import Settings

    from .conftest import Lab

    lab = Lab(db, Settings(data_dir=str(tmp_path / "data"), max_reservation_duration="3d"))
    setup_lab(lab)
    status, job = post_xml(lab, "alice", _reservesys_job("3d"))
    assert status == 201, job
    recipe = job["recipe_sets"][0]["recipes"][0]
    lab.app.settings = replace(lab.app.settings, max_reservation_duration="1d")  # lowered while it ran
    lab.clock.advance(hours=1)
    status, _ = lab.alice.patch(f"/recipes/{recipe['id']}", {"status": "completed", "result": "pass"})
    assert status == 200
    _, system = lab.alice.get("/systems/a.lab.test")
    kept = system["reservation"]
    assert kept["user"] == "alice" and kept["end"] == at(lab.clock() + timedelta(days=1))
    _, log = lab.alice.get(f"/reservations/{kept['id']}/activity")
    [shortened] = [entry for entry in log if entry["action"] == "shortened"]
    assert shortened["field"] == "duration" and shortened["old"] == "P3D"
    assert shortened["new"] == "P1D (this site's maximum of 1d)"


def test_reservesys_is_kept_no_longer_than_the_owners_loan(lab):
    setup_lab(lab)
    lab.admin.post("/systems/a.lab.test/loan", {"recipient": "alice", "duration": "6h"})
    status, job = post_xml(lab, "alice", _reservesys_job("2d"))
    assert status == 201, job
    recipe = job["recipe_sets"][0]["recipes"][0]
    lab.clock.advance(hours=1)
    assert lab.alice.patch(f"/recipes/{recipe['id']}", {"status": "completed", "result": "pass"})[0] == 200
    _, system = lab.alice.get("/systems/a.lab.test")
    kept = system["reservation"]
    assert kept["end"] == at(START + timedelta(hours=6))  # the loan's end, as for any reservation of hers
    _, log = lab.alice.get(f"/reservations/{kept['id']}/activity")
    [shortened] = [entry for entry in log if entry["action"] == "shortened"]
    assert shortened["new"] == f"PT5H (the end of the owner's loan ({at(START + timedelta(hours=6))}))"


def _statements(lab, call) -> int:
    """How many SQL statements call() runs."""
    from sqlalchemy import event

    count = [0]

    def counted(*args):
        count[0] += 1

    engines = {lab.db.writer, lab.db.reader}
    for engine in engines:
        event.listen(engine, "before_cursor_execute", counted)
    try:
        call()
    finally:
        for engine in engines:
            event.remove(engine, "before_cursor_execute", counted)
    return count[0]


def _jobs_of_two_sizes(lab) -> list[int]:
    """A 2-recipe and a 20-recipe job of alice's, both waiting (bob's job holds the only system)."""
    lab.system("busy.lab.test", condition="automated")
    recipe = ('<recipeSet><recipe><hostRequires><and><arch op="=" value="x86_64"/></and></hostRequires>'
              '<task name="/distribution/check-install"/></recipe></recipeSet>')
    assert post_xml(lab, "bob", f"<job>{recipe}</job>".encode())[0] == 201
    ids = []
    for sets in (2, 20):
        status, job = post_xml(lab, "alice", f"<job>{recipe * sets}</job>".encode())
        assert status == 201, job
        assert sum(len(rs["recipes"]) for rs in job["recipe_sets"]) == sets
        ids.append(job["id"])
    return ids


def test_reading_a_job_costs_the_same_statements_whatever_its_size(lab):
    """A job is read in a fixed number of statements, not one per recipe (its guests are read in one query)."""
    small, big = _jobs_of_two_sizes(lab)

    def read(job_id):
        status, job = lab.alice.get(f"/jobs/{job_id}")
        assert status == 200 and job["id"] == job_id
    assert _statements(lab, lambda: read(big)) == _statements(lab, lambda: read(small))


def test_beaker_results_xml_costs_the_same_statements_whatever_the_jobs_size(lab):
    """taskactions.to_xml (bkr job-results, mrack) reads a job in a fixed number of statements."""
    import xml.etree.ElementTree as ET
    import xmlrpc.client

    from lablease.services.auth import signin

    small, big = _jobs_of_two_sizes(lab)
    with UnitOfWork(lab.db) as uow:
        signin.set_password(uow, START, "alice", "a long enough password")
        uow.commit()

    def call(method, *params):
        response = lab.client.post("/bkr/client/", data=xmlrpc.client.dumps(params, method, allow_none=True),
                                   content_type="text/xml")
        return xmlrpc.client.loads(response.get_data())[0][0]  # a Fault raises
    assert call("auth.login_password", "alice", "a long enough password") == "alice"

    def results(job_id):
        root = ET.fromstring(call("taskactions.to_xml", f"J:{job_id}"))
        assert root.get("id") == str(job_id) and root.get("status") == "Queued"
    assert _statements(lab, lambda: results(big)) == _statements(lab, lambda: results(small))
