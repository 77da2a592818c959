"""Guest recipes over the API: placed with their host, guest systems and installations, callbacks, roll-ups."""
from pathlib import Path

from .conftest import Lab
from .test_provisioning_api import TREE, _token_for, installer, provisionable

CORPUS = Path(__file__).resolve().parents[1] / "jobxml" / "corpus"
HVM = {"condition": "automated", "attributes": {"HVM": ["1"]}}


def submit(lab: Lab, name: str) -> dict:
    response = lab.client.post("/api/v1/jobs", data=(CORPUS / name).read_bytes(), content_type="application/xml",
                               headers=lab.alice.headers)
    assert response.status_code == 201, response.get_json()
    return response.get_json()


def hypervisor(lab: Lab, fqdn="h1.lab.test") -> None:
    provisionable(lab, fqdn, **HVM)
    if not lab.admin.get("/distro-trees")[1]:
        assert lab.admin.post("/distro-trees", TREE)[0] == 201


def host_of(lab: Lab, job_id: int) -> dict:
    return lab.alice.get(f"/jobs/{job_id}")[1]["recipe_sets"][0]["recipes"][0]


def call(lab: Lab, url: str) -> int:
    return installer(lab, url, "POST")[0]


def install_host(lab: Lab, host: dict) -> None:
    """What the host's installer does: the three callbacks, with its own token."""
    installation_id = lab.alice.get(f"/systems/{host['system']}/installations")[1][0]["id"]
    token = _token_for(lab, installation_id)
    for event in ("install_start", "install_done", "postinstall_done"):
        assert lab.client.post(f"/api/v1/installations/{installation_id}/{event}?token={token}").status_code == 204


def test_a_host_and_two_guests_run_together_and_roll_up(lab):
    hypervisor(lab)
    job = submit(lab, "guest-recipes.xml")
    host = job["recipe_sets"][0]["recipes"][0]
    first, second = host["guests"]
    # scheduled with the host, in the same request: each guest has a system record of its own
    assert host["status"] == "waiting" and host["system"] == "h1.lab.test"
    assert first["system"] == f"guest-{first['id']}-rhel-guest-1" and second["system"] == f"guest-{second['id']}"
    assert [g["status"] for g in host["guests"]] == ["scheduled", "scheduled"]
    assert first["guestname"] == "rhel-guest-1" and second["guestname"] is None
    assert first["guestargs"].startswith("--ram=2048") and second["guestargs"] == "--ram=1024 --os-variant=fedora40"
    assert first["mac"].startswith("52:54:00:") and first["mac"] != second["mac"]
    assert first["host"] == second["host"] == host["id"] and first["installation"] is None
    # a guest system is nobody's to reserve or lend, and the scheduler does not give it out
    status, problem = lab.alice.post("/reservations", {"system": first["system"], "duration": "1h"})
    assert status == 409 and "guest recipe" in problem["detail"], problem
    assert lab.admin.post(f"/systems/{first['system']}/loan", {"recipient": "bob"})[0] == 409
    _, shown = lab.alice.get(f"/systems/{first['system']}")
    assert shown["guest"] is True and shown["lab"] == lab.admin.get("/systems/h1.lab.test")[1]["lab"]
    assert lab.admin.get("/systems/h1.lab.test")[1]["guest"] is False
    _, other = lab.bob.post("/jobs", {"recipe_sets": [{"recipes": [{}]}]})
    assert other["recipe_sets"][0]["recipes"][0]["status"] == "queued"
    why = lab.bob.get(f"/recipes/{other['recipe_sets'][0]['recipes'][0]['id']}")[1]["why"]
    assert why["systems"] == 1  # the hypervisor alone: guests are not counted as systems to run on

    install_host(lab, host)
    host = host_of(lab, job["id"])
    assert host["status"] == "running"
    for guest in host["guests"]:  # the host runs: its harness can start the guests
        assert guest["status"] == "waiting"
        installation = guest["installation"]
        assert set(installation["callbacks"]) == {"install_start", "install_done", "postinstall_done",
                                                  "install_fail"}
        assert installation["kernel_options"].endswith(f"inst.ks={installation['kickstart_url']}")
        assert installation["tree_url"] == TREE["url"] and installation["kernel_url"].startswith(TREE["url"])
        status, kickstart = installer(lab, installation["kickstart_url"])
        assert status == 200 and f"recipe R:{guest['id']}" in kickstart and guest["system"] in kickstart
        assert lab.alice.get(f"/installations/{installation['id']}")[1]["system"] == guest["system"]
        # nothing to power or netboot: the host's harness boots it
        assert lab.admin.get(f"/systems/{guest['system']}/commands")[1] == []
    first, second = host["guests"]
    assert "lang de_DE.UTF-8" in installer(lab, first["installation"]["kickstart_url"])[1]

    for event in ("install_start", "install_done", "postinstall_done"):
        assert call(lab, first["installation"]["callbacks"][event]) == 204
    assert call(lab, second["installation"]["callbacks"]["install_start"]) == 204
    assert lab.alice.get(f"/recipes/{first['id']}")[1]["status"] == "running"
    assert lab.alice.get(f"/recipes/{second['id']}")[1]["status"] == "installing"
    assert lab.alice.get(f"/jobs/{job['id']}")[1]["status"] == "installing"  # the least advanced recipe
    for event in ("install_done", "postinstall_done"):
        assert call(lab, second["installation"]["callbacks"][event]) == 204

    assert lab.alice.patch(f"/recipes/{first['id']}", {"status": "completed", "result": "pass"})[0] == 200
    assert lab.alice.patch(f"/recipes/{second['id']}", {"status": "completed", "result": "fail"})[0] == 200
    assert lab.alice.patch(f"/recipes/{host['id']}", {"status": "completed", "result": "pass"})[0] == 200
    _, done = lab.alice.get(f"/jobs/{job['id']}")
    assert (done["status"], done["result"]) == ("completed", "fail")  # the failed guest fails the set
    assert done["recipe_sets"][0]["result"] == "fail"
    # the host's reservesys (when="onfail") follows the host's own result: it passed, so h1 went to bob's job
    assert [r["user"] for r in lab.admin.get("/reservations", system="h1.lab.test", active="true")[1]] == ["bob"]
    for guest in host["guests"]:
        assert lab.admin.get(f"/systems/{guest['system']}")[1]["condition"] == "removed"
        assert call(lab, guest["installation"]["callbacks"]["install_fail"]) == 403  # over: its token is dead


def test_cancelling_or_aborting_the_host_ends_its_guests(lab):
    hypervisor(lab)
    job = submit(lab, "guest-recipe-minimal.xml")
    assert lab.alice.post(f"/jobs/{job['id']}/cancel")[0] == 200
    host = host_of(lab, job["id"])
    assert [host["status"]] + [g["status"] for g in host["guests"]] == ["cancelled", "cancelled"]
    assert lab.admin.get(f"/systems/{host['guests'][0]['system']}")[1]["condition"] == "removed"

    job = submit(lab, "guest-recipe-minimal.xml")
    host = host_of(lab, job["id"])
    install_host(lab, host)
    guest = host_of(lab, job["id"])["guests"][0]
    assert call(lab, guest["installation"]["callbacks"]["install_start"]) == 204
    assert lab.alice.patch(f"/recipes/{host['id']}", {"status": "aborted"})[0] == 200
    host = host_of(lab, job["id"])
    assert host["guests"][0]["status"] == "aborted" and host["guests"][0]["installation"]["status"] == "cancelled"
    assert lab.alice.get(f"/jobs/{job['id']}")[1]["status"] == "aborted"
    assert lab.alice.get("/reservations", system=guest["system"], active="true")[1] == []


def test_a_guest_that_fails_to_install_leaves_its_host_running(lab):
    hypervisor(lab)
    job = submit(lab, "guest-recipe-minimal.xml")
    host = host_of(lab, job["id"])
    install_host(lab, host)
    guest = host_of(lab, job["id"])["guests"][0]
    assert call(lab, guest["installation"]["callbacks"]["install_fail"]) == 204
    host = host_of(lab, job["id"])
    assert host["status"] == "running" and host["guests"][0]["status"] == "aborted"
    assert lab.alice.get("/reservations", system="h1.lab.test", active="true")[1][0]["kind"] == "recipe"


def test_a_multi_host_set_with_guests_starts_whole_or_not_at_all(lab):
    hypervisor(lab, "h1.lab.test")
    hypervisor(lab, "h2.lab.test")  # (with one hypervisor only, the set could never start: refused at submit)
    _, busy = lab.admin.post("/reservations", {"system": "h2.lab.test", "duration": "1h"})
    job = submit(lab, "guest-recipes-multihost.xml")
    recipes = job["recipe_sets"][0]["recipes"]
    # one free hypervisor for two hosts: nothing starts (the set may hold the free one), no guest gets a system
    assert sorted(r["status"] for r in recipes) in (["queued", "queued"], ["assigned", "queued"])
    assert [g["system"] for r in recipes for g in r["guests"]] == [None, None]
    _, waiting = lab.alice.get(f"/recipes/{recipes[0]['guests'][0]['id']}")
    assert waiting["why"]["message"].startswith(f"placed with its host recipe {recipes[0]['id']}, which waits: ")
    assert lab.admin.delete(f"/reservations/{busy['id']}")[0] == 204
    recipes = lab.alice.get(f"/jobs/{job['id']}")[1]["recipe_sets"][0]["recipes"]
    assert [r["status"] for r in recipes] == ["waiting", "waiting"]
    assert [g["status"] for r in recipes for g in r["guests"]] == ["scheduled", "scheduled"]
    assert [g["guestname"] for r in recipes for g in r["guests"]] == ["server-guest", "client-guest"]


def test_bad_guest_recipes_are_refused_with_their_line(lab):
    hypervisor(lab)
    cases = [
        (b"<job><recipeSet><recipe>\n<guestrecipe guestargs=''>\n<guestrecipe guestargs=''/>\n</guestrecipe>"
         b"</recipe></recipeSet></job>", "line 3: <guestrecipe> is not allowed inside <guestrecipe>"),
        (b"<job><recipeSet><recipe>\n<guestrecipe guestargs=''><task name='/t'/></guestrecipe>"
         b"</recipe></recipeSet></job>", "line 2: <guestrecipe> distro_requires: a guest recipe needs"),
        (b"<job><recipeSet><recipe>\n<guestrecipe guestargs=''>\n<distroRequires><distro_name value='Nope'/>"
         b"</distroRequires></guestrecipe></recipe></recipeSet></job>", "no distro tree matches distroRequires"),
    ]
    for document, expected in cases:
        response = lab.client.post("/api/v1/jobs", data=document, content_type="application/xml",
                                   headers=lab.alice.headers)
        assert response.status_code == 422 and expected in response.get_json()["detail"], response.get_json()
    assert lab.alice.get("/jobs")[1] == []  # nothing half-written
    assert [s["fqdn"] for s in lab.admin.get("/systems")[1]] == ["h1.lab.test"]
