"""The command queue carried out by the worker's runner, with the `command` driver running real scripts."""
import json
import os
import stat
from concurrent.futures import wait
from datetime import timedelta

import pytest

from lablease.config import Settings
from lablease.provision import netboot
from lablease.store.tables import Outbox
from lablease.store.uow import UnitOfWork
from lablease.worker.commands import CommandRunner

from .conftest import Lab

SCRIPTS = {
    # Records what it was given (one JSON line per call), then succeeds.
    "record": """#!/bin/sh
printf '{"mode": "%s", "address": "%s", "user": "%s", "pass": "%s", "fqdn": "%s", "start": %s}\\n' \\
  "$power_mode" "$power_address" "$power_user" "$power_pass" "$LABLEASE_FQDN" "$(date +%s.%N)" >> "$RECORD"
sleep "${SLOW:-0}"
printf '{"end": %s, "fqdn": "%s"}\\n' "$(date +%s.%N)" "$LABLEASE_FQDN" >> "$RECORD"
""",
    "broken": "#!/bin/sh\necho \"BMC said no to $power_user with $power_pass\" >&2\nexit 3\n",
    "hang": "#!/bin/sh\nsleep 60\n",
}


@pytest.fixture
def lab(db, tmp_path, monkeypatch):
    settings = Settings(data_dir=str(tmp_path / "data"), command_timeout="1s", command_retry_delay="10s",
                        command_max_attempts=3, command_workers=4, webhook_allowed_networks=("127.0.0.1/32",))
    scripts = settings.power_scripts_path
    scripts.mkdir(parents=True)
    for name, text in SCRIPTS.items():
        (scripts / name).write_text(text)
        (scripts / name).chmod(stat.S_IRWXU)
    monkeypatch.setenv("RECORD", str(tmp_path / "record.jsonl"))
    lab = Lab(db, settings)
    lab.record = tmp_path / "record.jsonl"
    lab.macs = 0  # netboot MACs handed out by scripted()
    lab.runner = CommandRunner(settings, db, lab.clock)
    yield lab
    lab.runner.stop()


def drain(lab) -> None:
    """Run everything runnable now, as the worker's passes would, until nothing more starts."""
    while lab.runner.start_due():
        wait(list(lab.runner.running))
    wait(list(lab.runner.running))


def scripted(lab, fqdn, script="record", address=None, **fields):
    """A system powered by a script, with its own netboot MAC: the test's first one 52:54:00:00:10:01, then :02..."""
    power = {"driver": "command", "script": script, "address": address or f"pdu-{fqdn}", "user": "ops",
             "password": "pdu-s3cret"}
    lab.macs += 1
    return lab.system(fqdn, power=power, netboot={"mac": f"52:54:00:00:10:{lab.macs:02x}"}, **fields)


def records(lab):
    return [json.loads(line) for line in lab.record.read_text().splitlines()] if lab.record.exists() else []


def modes(lab, fqdn=None):
    return [c["mode"] for c in records(lab) if "mode" in c and fqdn in (None, c["fqdn"])]


def test_a_power_command_runs_the_script_with_its_settings_in_the_environment(lab):
    scripted(lab, "c1.lab.test")
    _, command = lab.admin.post("/systems/c1.lab.test/power", {"action": "on"})
    drain(lab)
    _, done = lab.admin.get(f"/commands/{command['id']}")
    assert done["status"] == "completed" and done["attempts"] == 1 and done["error"] is None
    assert lab.admin.get("/systems/c1.lab.test")[1]["power_state"] == "on"
    call = records(lab)[0]
    assert (call["mode"], call["address"], call["user"], call["pass"], call["fqdn"]) == (
        "on", "pdu-c1.lab.test", "ops", "pdu-s3cret", "c1.lab.test")


def test_a_failing_command_is_retried_with_backoff_then_breaks_the_system(lab):
    scripted(lab, "c2.lab.test", script="broken", condition="automated")
    lab.admin.post("/distro-trees", {"name": "F40", "arch": "x86_64", "url": "http://m/f40/", "kernel": "vmlinuz",
                                     "initrd": "initrd.img"})
    lab.alice.patch("/me", {"webhook_url": "http://127.0.0.1:9/hook"})
    _, job = lab.alice.post("/jobs", {"recipe_sets": [{"recipes": [
        {"distro_requires": {"field": "distro_name", "op": "=", "value": "F40"},
         "reservesys": {"onabort": False}}]}]})
    recipe_id = job["recipe_sets"][0]["recipes"][0]["id"]
    drain(lab)  # netboot_install succeeds (files only); the reboot fails its first attempt
    _, commands = lab.admin.get("/systems/c2.lab.test/commands")
    reboot = commands[0]
    assert reboot["action"] == "reboot" and reboot["status"] == "queued" and reboot["attempts"] == 1
    assert "exit" in reboot["error"] and "pdu-s3cret" not in reboot["error"] and "***" in reboot["error"]
    lab.clock.advance(seconds=9)
    drain(lab)
    assert lab.admin.get(f"/commands/{reboot['id']}")[1]["attempts"] == 1  # not due before 10 s
    lab.clock.advance(seconds=1)
    drain(lab)
    assert lab.admin.get(f"/commands/{reboot['id']}")[1]["attempts"] == 2
    lab.clock.advance(seconds=19)
    drain(lab)
    assert lab.admin.get(f"/commands/{reboot['id']}")[1]["attempts"] == 2  # the delay doubled: 20 s
    lab.clock.advance(seconds=1)
    drain(lab)
    _, failed = lab.admin.get(f"/commands/{reboot['id']}")
    assert failed["status"] == "failed" and failed["attempts"] == 3
    system = lab.admin.get("/systems/c2.lab.test")[1]
    assert system["condition"] == "broken"
    assert lab.alice.get(f"/recipes/{recipe_id}")[1]["status"] == "aborted"
    _, installs = lab.alice.get("/systems/c2.lab.test/installations")
    assert installs[0]["status"] == "failed" and "reboot failed after 3 attempt(s)" in installs[0]["error"]
    with UnitOfWork(lab.db, write=False) as uow:
        events = {row.payload["event"]: row.payload for row in uow.session.query(Outbox)}
    assert "installation.failed" in events and "pdu-s3cret" not in json.dumps(list(events.values()))


def test_a_hanging_script_is_killed_at_the_timeout(lab):
    scripted(lab, "c3.lab.test", script="hang")
    _, command = lab.admin.post("/systems/c3.lab.test/power", {"action": "off"})
    drain(lab)
    _, shown = lab.admin.get(f"/commands/{command['id']}")
    assert shown["status"] == "queued" and shown["attempts"] == 1 and "timed out" in shown["error"]


def test_commands_of_one_system_run_in_order_and_one_power_address_runs_one_at_a_time(lab, monkeypatch):
    monkeypatch.setenv("SLOW", "0.3")
    for fqdn in ("d1.lab.test", "d2.lab.test", "d3.lab.test"):
        scripted(lab, fqdn, address="shared-pdu")
    scripted(lab, "e1.lab.test")
    for fqdn in ("d1.lab.test", "d2.lab.test", "d3.lab.test", "e1.lab.test"):
        lab.admin.post(f"/systems/{fqdn}/power", {"action": "on"})
    lab.admin.post("/systems/d1.lab.test/power", {"action": "off"})
    drain(lab)
    # on one power address, every call starts after the previous one ended
    running = 0
    for entry in records(lab):
        if entry["fqdn"].startswith("d"):
            running += 1 if "mode" in entry else -1
            assert running <= 1, records(lab)
    assert modes(lab, "d1.lab.test") == ["on", "off"]
    assert len(modes(lab)) == 5
    ends = [c for c in records(lab) if "end" in c]
    assert ends.index(next(c for c in ends if c["fqdn"] == "e1.lab.test")) < 3  # the other address ran alongside


def test_netboot_commands_write_and_clear_the_labs_tftp_root(lab):
    scripted(lab, "n1.lab.test")
    lab.admin.post("/distro-trees", {"name": "F40", "arch": "x86_64", "url": "http://m/f40/", "kernel": "vmlinuz",
                                     "initrd": "initrd.img"})
    _, reservation = lab.alice.post("/reservations", {"system": "n1.lab.test", "duration": "1h"})
    _, install = lab.alice.post("/systems/n1.lab.test/provision", {"distro_tree": "F40"})
    drain(lab)
    root = lab.settings.tftp_root_for(None)
    script = netboot.read_ipxe(root, "52:54:00:00:10:01")
    assert "http://m/f40/vmlinuz" in script and install["kickstart_url"] in script
    assert (root / "pxelinux.cfg" / "01-52-54-00-00-10-01").exists()
    assert modes(lab) == ["reboot"]
    lab.alice.delete(f"/reservations/{reservation['id']}")
    drain(lab)
    assert netboot.read_ipxe(root, "52:54:00:00:10:01") is None
    assert modes(lab) == ["reboot", "off"]
    assert lab.admin.get("/systems/n1.lab.test")[1]["power_state"] == "off"


def test_a_command_interrupted_by_a_stopped_worker_is_retried_not_forgotten(lab):
    scripted(lab, "r1.lab.test")
    _, command = lab.admin.post("/systems/r1.lab.test/power", {"action": "on"})
    # A worker claims it and dies before recording anything: the row says running.
    from lablease.services.provisioning import commands
    from lablease.services.handlers import unit_of_work

    with unit_of_work(lab.db, lab.settings) as uow:
        claimed = commands.claim(uow, lab.clock(), 1, timedelta(seconds=1), lambda *_: None)
        uow.commit()
    assert [c.id for c in claimed] == [command["id"]]
    assert lab.admin.get(f"/commands/{command['id']}")[1]["status"] == "running"
    drain(lab)
    assert records(lab) == []  # still running as far as anyone knows: not run twice
    # PostgreSQL (several workers): taken back once its lease has run out.
    lab.clock.advance(seconds=15)
    lab.runner.recover(everything=False)
    assert lab.admin.get(f"/commands/{command['id']}")[1]["status"] == "running"
    lab.clock.advance(seconds=2)
    lab.runner.recover(everything=False)
    _, shown = lab.admin.get(f"/commands/{command['id']}")
    assert shown["status"] == "queued" and "interrupted" in shown["error"]
    lab.clock.advance(seconds=10)
    drain(lab)
    _, shown = lab.admin.get(f"/commands/{command['id']}")
    assert shown["status"] == "completed" and shown["attempts"] == 2
    assert modes(lab) == ["on"]


def test_at_the_start_of_the_only_worker_every_running_command_was_interrupted(lab):
    scripted(lab, "r2.lab.test")
    _, command = lab.admin.post("/systems/r2.lab.test/power", {"action": "on"})
    from lablease.services.provisioning import commands
    from lablease.services.handlers import unit_of_work

    with unit_of_work(lab.db, lab.settings) as uow:
        commands.claim(uow, lab.clock(), 1, timedelta(minutes=5), lambda *_: None)
        uow.commit()
    lab.runner.recover(everything=True)
    _, shown = lab.admin.get(f"/commands/{command['id']}")
    assert shown["status"] == "queued" and shown["attempts"] == 1


def test_the_environment_of_the_worker_does_not_leak_into_errors(lab):
    scripted(lab, "x1.lab.test", script="missing-script")
    _, command = lab.admin.post("/systems/x1.lab.test/power", {"action": "on"})
    drain(lab)
    _, shown = lab.admin.get(f"/commands/{command['id']}")
    assert shown["status"] == "queued" and "missing-script" in shown["error"]
    assert os.environ.get("RECORD") not in shown["error"]


def test_the_loaders_written_follow_the_system_and_what_can_boot_the_tree(lab):
    scripted(lab, "l1.lab.test")
    lab.admin.post("/distro-trees", {"name": "F40s", "arch": "x86_64", "url": "https://m/f40/", "kernel": "vmlinuz",
                                     "initrd": "initrd.img"})
    lab.alice.post("/reservations", {"system": "l1.lab.test", "duration": "1h"})
    lab.alice.post("/systems/l1.lab.test/provision", {"distro_tree": "F40s"})
    drain(lab)
    root = lab.settings.tftp_root_for(None)
    hyphens = "52-54-00-00-10-01"
    assert (root / "ipxe" / hyphens).exists() and (root / "pxelinux.cfg" / f"01-{hyphens}").exists()
    assert not (root / "boot" / "grub" / f"grub.cfg-01-{hyphens}").exists()  # GRUB2 cannot fetch https
    status, problem = lab.admin.patch("/systems/l1.lab.test", {"netboot": {"mac": "52:54:00:00:10:01",
                                                                           "loaders": ["ipxe", "floppy"]}})
    assert status == 422 and "loaders" in problem["detail"]
    lab.admin.patch("/systems/l1.lab.test", {"netboot": {"mac": "52:54:00:00:10:01", "loaders": ["pxelinux"]}})
    lab.alice.post("/systems/l1.lab.test/provision", {"distro_tree": "F40s"})
    (root / "ipxe" / hyphens).unlink()
    drain(lab)
    assert not (root / "ipxe" / hyphens).exists() and (root / "pxelinux.cfg" / f"01-{hyphens}").exists()


def test_a_command_failing_for_good_puts_an_advance_reservation_holding_the_system_in_error(lab):
    scripted(lab, "ar1.lab.test", script="broken", condition="automated")
    _, granted = lab.admin.post("/advance-reservations", {"hosts": ["ar1.lab.test"], "duration": "2h",
                                                          "start": (lab.clock() + timedelta(hours=1)).isoformat()})
    assert granted["state"] == "w", granted
    lab.admin.post("/systems/ar1.lab.test/power", {"action": "reboot"})
    for delay in (0, 10, 20):  # three attempts, the worker's own change: nothing to refuse
        lab.clock.advance(seconds=delay)
        drain(lab)
    _, shown = lab.admin.get(f"/advance-reservations/{granted['id']}")
    assert shown["state"] == "E" and shown["error_reasons"] == ["ar1.lab.test is broken"]
