"""Provisioning over the API: manual provision, the installer's callbacks and token, recipes, release actions."""
import re
from datetime import timedelta
from urllib.parse import urlsplit

from lablease.domain.paging import PageRequest
from lablease.config import Settings
from lablease.services.records import activity
from lablease.services.provisioning.installations import boot_image
from lablease.store.tables import Outbox
from lablease.store.provision_tables import Installation
from lablease.store.uow import UnitOfWork
from lablease.worker.loop import run_due

from .conftest import START, Lab

MAC = "52:54:00:aa:bb:01"  # the first provisionable system's; each system has its own netboot MAC
TREE = {"name": "Fedora-40", "family": "Fedora40", "arch": "x86_64", "url": "http://mirror.lab.test/f40/os/",
        "kernel": "images/pxeboot/vmlinuz", "initrd": "images/pxeboot/initrd.img", "ks_meta": "lang=de_DE.UTF-8",
        "kernel_options": "console=ttyS0"}


def provisionable(lab, fqdn="p1.lab.test", **fields):
    """A system that can be provisioned; the lab's n-th one has netboot MAC 52:54:00:aa:bb:0n (the first MAC)."""
    lab.provisioned = getattr(lab, "provisioned", 0) + 1
    fields = {"power": {"driver": "ipmitool", "address": "bmc-p1", "user": "root", "password": "s3cr3t-pw"},
              "netboot": {"mac": f"52:54:00:aa:bb:{lab.provisioned:02x}"}, **fields}
    return lab.system(fqdn, **fields)


def setup(lab):
    provisionable(lab)
    status, tree = lab.admin.post("/distro-trees", TREE)
    assert status == 201, tree
    lab.alice.post("/reservations", {"system": "p1.lab.test", "duration": "8h"})
    return tree


def installer(lab, url: str, method="GET"):
    """The installing machine's request: no user token, just the URL the server wrote."""
    parts = urlsplit(url)
    response = lab.client.open(parts.path, method=method, query_string=parts.query)
    return response.status_code, response.get_data(as_text=True)


def callback_urls(kickstart: str) -> dict:
    return {m.group(2): m.group(0) for m in re.finditer(
        r"https?://[^\s']+/api/v1/installations/(\d+)/(install_start|install_done|postinstall_done|install_fail)"
        r"\?token=[\w-]+", kickstart)}


def test_manual_provision_through_the_installers_callbacks(lab):
    setup(lab)
    status, install = lab.alice.post("/systems/p1.lab.test/provision",
                                     {"distro_tree": "Fedora-40", "ks_meta": "packages=vim:git",
                                      "kernel_options": "quiet"})
    assert status == 202, install
    assert install["status"] == "queued" and install["user"] == "alice" and install["reservation"]
    assert install["kernel_options"] == "quiet"  # as asked; the boot line adds the tree's console=ttyS0
    assert lab.alice.get("/systems/p1.lab.test")[1]["usage"] == "waiting"
    _, queued = lab.alice.get("/systems/p1.lab.test/commands")
    assert [(c["action"], c["status"]) for c in reversed(queued)] == [("netboot_install", "queued"),
                                                                      ("reboot", "queued")]
    status, kickstart = installer(lab, install["kickstart_url"])
    assert status == 200
    image = _boot_image(lab, install["id"])
    assert image.kernel_url == "http://mirror.lab.test/f40/os/images/pxeboot/vmlinuz"
    assert image.kernel_options == f"console=ttyS0 quiet inst.ks={install['kickstart_url']}"
    assert "url --url=http://mirror.lab.test/f40/os/" in kickstart and "lang de_DE.UTF-8" in kickstart
    assert "vim" in kickstart and "git" in kickstart
    urls = callback_urls(kickstart)
    assert set(urls) == {"install_start", "install_done", "postinstall_done", "install_fail"}

    assert installer(lab, urls["install_start"], "POST")[0] == 204
    assert installer(lab, urls["install_start"], "POST")[0] == 204  # a retried call changes nothing
    assert lab.alice.get("/systems/p1.lab.test")[1]["usage"] == "installing"
    assert installer(lab, urls["install_done"], "POST")[0] == 204
    _, queued = lab.alice.get("/systems/p1.lab.test/commands")
    assert queued[0]["action"] == "netboot_local"  # the next boot reaches the installed disk
    assert installer(lab, urls["postinstall_done"], "POST")[0] == 204
    _, shown = lab.alice.get(f"/installations/{install['id']}")
    assert shown["status"] == "running" and shown["installed_at"] and shown["finished_at"]
    assert "<token>" in shown["kickstart"] and urlsplit(urls["install_start"]).query[6:] not in shown["kickstart"]
    system = lab.alice.get("/systems/p1.lab.test")[1]
    assert system["usage"] == "running" and system["installation"] == {"id": install["id"], "status": "running"}
    # the system runs it until the reservation ends; then it is history
    lab.alice.delete(f"/reservations/{install['reservation']}")
    assert lab.alice.get(f"/installations/{install['id']}")[1]["status"] == "completed"


def test_forged_and_reused_tokens_are_refused(lab):
    setup(lab)
    _, first = lab.alice.post("/systems/p1.lab.test/provision", {"distro_tree": "Fedora-40"})
    urls = callback_urls(installer(lab, first["kickstart_url"])[1])
    forged = re.sub(r"token=[\w-]+", "token=" + "A" * 43, urls["install_start"])
    assert installer(lab, forged, "POST")[0] == 403
    assert installer(lab, urls["install_start"].split("?")[0], "POST")[0] == 403  # no token at all
    other_id = re.sub(r"installations/\d+/", f"installations/{first['id'] + 1}/", urls["install_start"])
    assert installer(lab, other_id, "POST")[0] == 403  # a token is good for its own installation only
    assert installer(lab, first["kickstart_url"].replace("token=", "token=x"))[0] == 403
    # a new provision supersedes the first: its token no longer works
    _, second = lab.alice.post("/systems/p1.lab.test/provision", {"distro_tree": "Fedora-40"})
    assert lab.alice.get(f"/installations/{first['id']}")[1]["status"] == "cancelled"
    status, _ = installer(lab, urls["install_start"], "POST")
    assert status == 403
    assert installer(lab, first["kickstart_url"])[0] == 403
    assert installer(lab, second["kickstart_url"])[0] == 200
    # out of order: postinstall_done before the install is done
    second_urls = callback_urls(installer(lab, second["kickstart_url"])[1])
    status, _ = installer(lab, second_urls["postinstall_done"], "POST")
    assert status == 409
    # the recipe form of the path: no such recipe (the case with a real recipe is below)
    assert lab.anonymous().post("/recipes/999999/install_start")[0] == 404


def test_the_token_opens_nothing_once_the_installation_is_over(lab):
    setup(lab)
    _, install = lab.alice.post("/systems/p1.lab.test/provision", {"distro_tree": "Fedora-40"})
    urls = callback_urls(installer(lab, install["kickstart_url"])[1])
    for event in ("install_start", "install_done"):
        assert installer(lab, urls[event], "POST")[0] == 204
    assert installer(lab, install["kickstart_url"])[0] == 200  # still installing: an installer may fetch it again
    assert installer(lab, urls["postinstall_done"], "POST")[0] == 204
    assert lab.alice.get(f"/installations/{install['id']}")[1]["status"] == "running"
    # running is over for the installer: neither the kickstart nor any callback answers to the token
    status, body = installer(lab, install["kickstart_url"])
    assert status == 403 and "running" in body and "rootpw" not in body
    for event in ("install_start", "install_done", "postinstall_done", "install_fail"):
        assert installer(lab, urls[event], "POST")[0] == 403, event
    assert lab.alice.get(f"/installations/{install['id']}")[1]["status"] == "running"  # nothing changed


def test_only_the_holder_provisions_and_only_installable_systems(lab):
    setup(lab)
    status, problem = lab.bob.post("/systems/p1.lab.test/provision", {"distro_tree": "Fedora-40"})
    assert status == 403 and "current holder" in problem["detail"]
    lab.system("bare.lab.test")
    lab.alice.post("/reservations", {"system": "bare.lab.test", "duration": "1h"})
    status, problem = lab.alice.post("/systems/bare.lab.test/provision", {"distro_tree": "Fedora-40"})
    assert status == 409 and "no power driver" in problem["detail"]
    status, problem = lab.alice.post("/systems/p1.lab.test/provision", {"distro_tree": "Nope-1"})
    assert status == 422 and "no distro tree Nope-1" in problem["detail"]
    status, problem = lab.alice.post("/systems/p1.lab.test/provision", {"distro_tree": "Fedora-40",
                                                                         "ks_meta": "broken='quote"})
    assert status == 422 and "ks_meta" in problem["detail"]
    assert lab.alice.get("/systems/p1.lab.test/installations")[1] == []  # nothing half-written


def test_a_template_error_fails_that_provision_clearly_and_writes_nothing(lab):
    kickstarts = lab.settings.kickstart_path / "kickstarts"
    kickstarts.mkdir(parents=True)
    (kickstarts / "Fedora40").write_text("url --url={{ distro.url }}\n{% if %}\n")
    setup(lab)
    status, problem = lab.alice.post("/systems/p1.lab.test/provision", {"distro_tree": "Fedora-40"})
    assert status == 422 and "kickstarts/Fedora40 line 2" in problem["detail"], problem
    (kickstarts / "Fedora40").write_text("{{ ''.__class__.__mro__[1].__subclasses__() }}\n")
    status, problem = lab.alice.post("/systems/p1.lab.test/provision", {"distro_tree": "Fedora-40"})
    assert status == 422 and "kickstarts/Fedora40" in problem["detail"], problem
    assert lab.alice.get("/systems/p1.lab.test/installations")[1] == []
    assert lab.alice.get("/systems/p1.lab.test/commands")[1] == []
    assert lab.alice.get("/systems/p1.lab.test")[1]["usage"] == "idle"


def test_returning_the_reservation_stops_the_install_clears_netboot_and_powers_off(lab):
    setup(lab)
    _, install = lab.alice.post("/systems/p1.lab.test/provision", {"distro_tree": "Fedora-40"})
    _, reservations = lab.alice.get("/reservations", active="true")
    assert lab.alice.delete(f"/reservations/{reservations[0]['id']}")[0] == 204
    assert lab.alice.get(f"/installations/{install['id']}")[1]["status"] == "cancelled"
    _, queued = lab.alice.get("/systems/p1.lab.test/commands")
    assert [c["action"] for c in queued[:2]] == ["off", "netboot_clear"]
    assert lab.alice.get("/systems/p1.lab.test")[1]["usage"] == "idle"


def test_release_actions_leave_on_and_reprovision(lab):
    tree = setup(lab)
    assert lab.admin.patch("/systems/p1.lab.test", {"release_action": "leave_on"})[0] == 200
    _, reservations = lab.alice.get("/reservations", active="true")
    lab.alice.delete(f"/reservations/{reservations[0]['id']}")
    assert [c["action"] for c in lab.admin.get("/systems/p1.lab.test/commands")[1]] == ["netboot_clear"]
    status, problem = lab.admin.patch("/systems/p1.lab.test", {"release_action": "reprovision",
                                                              "reprovision_distro_tree": 999})
    assert status == 422 and "no distro tree 999" in problem["detail"]
    lab.admin.patch("/systems/p1.lab.test", {"release_action": "reprovision", "reprovision_distro_tree": tree["id"]})
    _, reservation = lab.alice.post("/reservations", {"system": "p1.lab.test", "duration": "1h"})
    lab.alice.delete(f"/reservations/{reservation['id']}")
    _, installs = lab.admin.get("/systems/p1.lab.test/installations")
    assert installs[0]["user"] is None and installs[0]["status"] == "queued"
    assert [c["action"] for c in lab.admin.get("/systems/p1.lab.test/commands")[1][:3]] == [
        "reboot", "netboot_install", "netboot_clear"]


def test_the_install_watchdog_fails_a_stalled_install_and_tells_the_holder(db, tmp_path):
    lab = Lab(db, Settings(data_dir=str(tmp_path / "data"), webhook_allowed_networks=("127.0.0.1/32",)))
    setup(lab)
    lab.alice.patch("/me", {"webhook_url": "http://127.0.0.1:9/hook"})
    _, install = lab.alice.post("/systems/p1.lab.test/provision", {"distro_tree": "Fedora-40"})
    run_due(lab.db, START + timedelta(minutes=59), lab.settings)
    assert lab.alice.get(f"/installations/{install['id']}")[1]["status"] == "queued"
    run_due(lab.db, START + timedelta(hours=1), lab.settings)
    _, failed = lab.alice.get(f"/installations/{install['id']}")
    assert failed["status"] == "failed" and "no progress from the installer for 1h" in failed["error"]
    assert lab.alice.get("/systems/p1.lab.test")[1]["usage"] == "idle"
    assert lab.alice.get("/reservations", active="true")[1]  # the holder keeps the system to try again
    assert lab.alice.get("/systems/p1.lab.test/commands")[1][0]["action"] == "netboot_clear"
    with UnitOfWork(lab.db, write=False) as uow:
        events = [row.payload["event"] for row in uow.session.query(Outbox)]
    assert "installation.failed" in events


def test_power_needs_the_holder_or_control_system(lab):
    setup(lab)
    status, command = lab.alice.post("/systems/p1.lab.test/power", {"action": "reboot"})
    assert status == 202 and command["action"] == "reboot" and command["status"] == "queued"
    status, problem = lab.bob.post("/systems/p1.lab.test/power", {"action": "off"})
    assert status == 403 and "control_system" in problem["detail"]
    lab.admin.post("/systems/p1.lab.test/access-policy/rules", {"permission": "control_system", "user": "bob"})
    assert lab.bob.post("/systems/p1.lab.test/power", {"action": "off"})[0] == 202
    assert lab.bob.post("/systems/p1.lab.test/power", {"action": "explode"})[0] == 422
    assert lab.bob.get(f"/commands/{command['id']}")[1]["user"] == "alice"


def test_no_power_credential_appears_in_any_answer(lab):
    setup(lab)
    lab.admin.patch("/systems/p1.lab.test", {"power": {"driver": "ipmitool", "address": "bmc-p1", "user": "root",
                                                       "password": "n3w-s3cr3t"}})
    lab.alice.post("/systems/p1.lab.test/power", {"action": "on"})
    _, install = lab.alice.post("/systems/p1.lab.test/provision", {"distro_tree": "Fedora-40"})
    answers = [lab.admin.get(path)[1] for path in (
        "/systems/p1.lab.test", "/systems", "/systems/p1.lab.test/commands", "/systems/p1.lab.test/activity",
        "/systems/p1.lab.test/installations", f"/installations/{install['id']}")]
    answers.append(installer(lab, install["kickstart_url"])[1])
    for answer in answers:
        assert "s3cr3t" not in str(answer)


def test_a_scheduled_recipe_goes_waiting_installing_running_through_the_callbacks(lab):
    provisionable(lab, condition="automated")
    lab.admin.post("/distro-trees", TREE)
    _, job = lab.alice.post("/jobs", {"recipe_sets": [{"recipes": [
        {"distro_requires": {"field": "distro_name", "op": "=", "value": "Fedora-40"}, "runtime_limit": 3600}]}]})
    recipe = job["recipe_sets"][0]["recipes"][0]
    assert recipe["status"] == "waiting"
    _, installs = lab.alice.get("/systems/p1.lab.test/installations")
    kickstart = lab.alice.get(f"/installations/{installs[0]['id']}")[1]["kickstart"]
    assert f"recipe R:{recipe['id']}" in kickstart
    # the installer only has what the server wrote into the netboot config; take the token from the commands' view
    token = _token_for(lab, installs[0]["id"])
    by_recipe = f"/api/v1/recipes/{recipe['id']}/install_start?token={token}"
    assert lab.client.post(by_recipe.split("?")[0]).status_code == 403  # the recipe form still needs the token
    assert lab.client.post(by_recipe.replace("token=", "token=x")).status_code == 403
    assert lab.client.post(by_recipe).status_code == 204
    assert lab.alice.get(f"/recipes/{recipe['id']}")[1]["status"] == "installing"
    lab.clock.advance(minutes=10)
    for event in ("install_done", "postinstall_done"):
        assert lab.client.post(f"/api/v1/installations/{installs[0]['id']}/{event}?token={token}").status_code == 204
    _, running = lab.alice.get(f"/recipes/{recipe['id']}")
    assert running["status"] == "running"
    _, reservation = lab.alice.get("/reservations", system="p1.lab.test", active="true")
    assert reservation[0]["end"] == (lab.clock() + timedelta(hours=1)).isoformat().replace("+00:00", "Z")


def test_install_fail_aborts_the_recipe_and_frees_the_system(lab):
    provisionable(lab, condition="automated")
    lab.admin.post("/distro-trees", TREE)
    _, job = lab.alice.post("/jobs", {"recipe_sets": [{"recipes": [
        {"distro_requires": {"field": "distro_name", "op": "=", "value": "Fedora-40"}, "runtime_limit": 3600,
         "reservesys": {"onabort": False}}]}]})
    recipe = job["recipe_sets"][0]["recipes"][0]
    _, installs = lab.alice.get("/systems/p1.lab.test/installations")
    token = _token_for(lab, installs[0]["id"])
    assert lab.client.post(f"/api/v1/installations/{installs[0]['id']}/install_fail?token={token}").status_code == 204
    assert lab.alice.get(f"/recipes/{recipe['id']}")[1]["status"] == "aborted"
    assert lab.alice.get("/reservations", system="p1.lab.test", active="true")[1] == []
    # its config would boot an installer whose token is dead: cleared
    assert "netboot_clear" in [c["action"] for c in lab.admin.get("/systems/p1.lab.test/commands")[1]]
    with UnitOfWork(lab.db, write=False) as uow:
        reasons = [e["new"] for e in activity.entries(uow, "recipe", recipe["id"], PageRequest()).items if e["field"] == "reason"]
    assert any("install_fail" in reason for reason in reasons)


def _boot_image(lab, installation_id):
    """What the worker writes into the netboot config for the installation."""
    with UnitOfWork(lab.db, write=False, settings=lab.settings) as uow:
        return boot_image(uow, uow.session.get(Installation, installation_id))


def _token_for(lab, installation_id):
    """The installer's token, as the netboot config carries it (in the kickstart URL)."""
    return re.search(r"token=([\w-]+)", _boot_image(lab, installation_id).kernel_options).group(1)


def test_changing_power_settings_keeps_the_stored_password(lab):
    provisionable(lab)
    status, _ = lab.admin.patch("/systems/p1.lab.test", {"power": {"driver": "ipmitool", "address": "bmc-new",
                                                                   "user": "root"}})
    assert status == 200  # still valid: the password the server keeps counts
    with UnitOfWork(lab.db, write=False) as uow:
        from lablease.store.tables import System

        power = uow.session.query(System).filter_by(fqdn="p1.lab.test").one().power
    assert power == {"driver": "ipmitool", "address": "bmc-new", "user": "root", "password": "s3cr3t-pw"}
    lab.admin.patch("/systems/p1.lab.test", {"power": {"driver": "ipmitool", "address": "bmc-new", "user": "root",
                                                       "password": None}})
    with UnitOfWork(lab.db, write=False) as uow:
        from lablease.store.tables import System

        power = uow.session.query(System).filter_by(fqdn="p1.lab.test").one().power
    assert "password" not in power  # removing it takes an explicit null
