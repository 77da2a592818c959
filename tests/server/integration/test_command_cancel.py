"""An administrator cancels a queued or stuck command: DELETE /commands/{id}; its installation fails."""
from datetime import timedelta

from sqlalchemy import select

import pytest

from lablease.config import Settings
from lablease.services.provisioning import commands
from lablease.services.handlers import unit_of_work
from lablease.store.tables import Outbox

from .conftest import Lab
from .test_provisioning_api import TREE, provisionable, setup


@pytest.fixture
def lab(db, tmp_path):
    """Mail is configured, so the holder's notices are queued for their address."""
    return Lab(db, Settings(data_dir=str(tmp_path / "data"), smtp_host="mail.lab.test"))


def _commands(lab, fqdn="p1.lab.test"):
    return {c["action"]: c for c in lab.admin.get(f"/systems/{fqdn}/commands")[1]}


def test_cancelling_a_queued_command_fails_its_installation_and_tells_the_holder(lab):
    setup(lab)
    lab.alice.patch("/me", {"email": "alice@lab.test"})
    _, install = lab.alice.post("/systems/p1.lab.test/provision", {"distro_tree": "Fedora-40"})
    queued = _commands(lab)
    netboot_install = queued["netboot_install"]["id"]
    assert lab.alice.delete(f"/commands/{netboot_install}")[0] == 403  # the holder, but not an administrator
    assert lab.admin.delete("/commands/999999")[0] == 404
    status, cancelled = lab.admin.delete(f"/commands/{netboot_install}")
    assert status == 200, cancelled
    assert (cancelled["status"], cancelled["error"]) == ("cancelled", "cancelled by admin") and cancelled["finished_at"]
    after = _commands(lab)
    assert after["reboot"]["status"] == "cancelled" and f"command {netboot_install}" in after["reboot"]["error"]
    assert after["netboot_clear"]["status"] == "queued"  # the dead installation's netboot files go
    _, failed = lab.alice.get(f"/installations/{install['id']}")
    assert failed["status"] == "failed"
    assert failed["error"] == f"netboot_install command {netboot_install} cancelled by admin"
    assert lab.alice.get("/systems/p1.lab.test")[1]["usage"] == "idle"
    with unit_of_work(lab.db, lab.settings, write=False) as uow:
        told = [o.payload["event"] for o in uow.session.execute(
            select(Outbox).where(Outbox.destination == "alice@lab.test")).scalars()]
    assert "installation.failed" in told
    status, problem = lab.admin.delete(f"/commands/{netboot_install}")
    assert status == 409 and "already cancelled" in problem["detail"]


def test_a_stuck_running_command_can_be_cancelled_and_its_late_result_changes_nothing(lab):
    setup(lab)
    lab.alice.post("/systems/p1.lab.test/provision", {"distro_tree": "Fedora-40"})
    with unit_of_work(lab.db, lab.settings) as uow:  # a worker takes it and hangs on a dead BMC
        [stuck] = commands.claim(uow, lab.clock(), 1, timedelta(minutes=5), lambda *_: None)
        uow.commit()
    assert lab.admin.get(f"/commands/{stuck.id}")[1]["status"] == "running"
    status, cancelled = lab.admin.delete(f"/commands/{stuck.id}")
    assert status == 200 and cancelled["status"] == "cancelled"
    with unit_of_work(lab.db, lab.settings) as uow:  # the hung attempt finally returns
        commands.record_success(uow, stuck.id, lab.clock() + timedelta(minutes=3), "on")
        uow.commit()
    assert lab.admin.get(f"/commands/{stuck.id}")[1]["status"] == "cancelled"


def test_cancelling_a_recipes_install_command_aborts_the_recipe(lab):
    provisionable(lab, condition="automated")
    lab.admin.post("/distro-trees", TREE)
    _, job = lab.alice.post("/jobs", {"recipe_sets": [{"recipes": [
        {"distro_requires": {"field": "distro_name", "op": "=", "value": "Fedora-40"}, "runtime_limit": 3600}]}]})
    recipe = job["recipe_sets"][0]["recipes"][0]
    reboot = _commands(lab)["reboot"]["id"]
    assert lab.admin.delete(f"/commands/{reboot}")[0] == 200
    assert lab.alice.get(f"/recipes/{recipe['id']}")[1]["status"] == "aborted"


def test_a_finished_command_cannot_be_cancelled(lab):
    provisionable(lab)
    _, command = lab.admin.post("/systems/p1.lab.test/power", {"action": "on"})
    with unit_of_work(lab.db, lab.settings) as uow:
        commands.claim(uow, lab.clock(), 1, timedelta(minutes=5), lambda *_: None)
        commands.record_success(uow, command["id"], lab.clock(), "on")
        uow.commit()
    status, problem = lab.admin.delete(f"/commands/{command['id']}")
    assert status == 409 and "already completed" in problem["detail"]
