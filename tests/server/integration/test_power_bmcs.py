"""The redfish and ipmitool power drivers against real BMC emulators on loopback (tests/support/bmc.py).

Redfish: sushy-tools' sushy-emulator (the emulator OpenStack tests Ironic against) with its fake systems,
over HTTPS with a test CA and htpasswd basic auth. Like a real BMC it applies an action seconds after
accepting it, so the tests read the state back as the worker does: until it has taken effect.
IPMI: OpenIPMI's ipmi_sim, IPMI 2.0 (lanplus) with a user and password, run by the real ipmitool; its
chassis power is a file its chassis_control program keeps, so the machine's side is seen too.
Each emulator starts once for the module; Redfish tests use systems of their own, the IPMI tests (one
BMC, one machine) set the power they start from.
"""
from __future__ import annotations

import os
import socket
import time
from contextlib import contextmanager

import pytest

from lablease.config import Settings
from lablease.power import PowerError, PowerTarget
from lablease.power.registry import driver_for
from lablease.worker.commands import CommandRunner

from ...support import bmc as emulators
from .conftest import Lab
from .test_commands import drain

FQDN = "s1.lab.test"
SETTLE = 30.0  # seconds: the emulator applies an action 1 to 11 s after accepting it
SYSTEMS = {name: f"{n:08d}-0000-4000-8000-{n:012d}" for n, name in enumerate(
    ["first", "chosen", "queued", "spare"], start=1)}


def needs(reason: str | None) -> None:
    if reason:
        if os.environ.get("CI"):
            pytest.fail(f"{reason}: `make test` installs it")
        pytest.skip(reason)


@pytest.fixture(scope="module")
def redfish_bmc(tmp_path_factory):
    needs(emulators.missing_redfish())
    systems = [{"uuid": SYSTEMS["first"], "name": "first", "power_state": "Off"},
               {"uuid": SYSTEMS["chosen"], "name": "chosen", "power_state": "Off"},
               {"uuid": SYSTEMS["queued"], "name": "queued", "power_state": "On"},
               {"uuid": SYSTEMS["spare"], "name": "spare", "power_state": "On"}]
    with emulators.RedfishEmulator(tmp_path_factory.mktemp("redfish"), systems) as bmc:
        yield bmc


@pytest.fixture(scope="module")
def ipmi_bmc(tmp_path_factory):
    needs(emulators.missing_ipmi())
    with emulators.IpmiSimulator(tmp_path_factory.mktemp("ipmi")) as bmc:
        yield bmc


def target(tmp_path, timeout=10.0, **settings) -> PowerTarget:
    return PowerTarget(fqdn=FQDN, settings=settings, timeout=timeout, data_dir=tmp_path / "data",
                       scripts_dir=tmp_path / "scripts", tftp_root=tmp_path / "tftp", mac=None)


def redfish_settings(bmc, system: str, **extra) -> dict:
    return {"driver": "redfish", "url": bmc.url, "user": emulators.USER, "password": emulators.PASSWORD,
            "id": SYSTEMS[system], "verify": str(bmc.ca), **extra}


def redfish(tmp_path, bmc, system: str, **extra):
    return driver_for(target(tmp_path, **redfish_settings(bmc, system, **extra)))


@contextmanager
def worker_lab(db, tmp_path, **settings):
    """An in-process API and the worker's command runner over one database."""
    lab = Lab(db, Settings(data_dir=str(tmp_path / "data"), **settings))
    lab.runner = CommandRunner(lab.settings, db, lab.clock)
    try:
        yield lab
    finally:
        lab.runner.stop()


def act(driver, action: str, expected: str) -> str:
    """One action, then the state read back as the worker reads it: once the BMC has applied it."""
    driver.act(action)
    return driver.settle(expected, time.monotonic() + SETTLE)


# --- redfish --------------------------------------------------------------------------------------------

@pytest.mark.timeout(120)
def test_redfish_powers_the_chosen_system_on_reboots_and_off(tmp_path, redfish_bmc):
    driver = redfish(tmp_path, redfish_bmc, "chosen")
    assert driver.status() == "off"
    assert act(driver, "on", "on") == "on"
    assert redfish_bmc.power_state(SYSTEMS["chosen"]) == "On"
    assert act(driver, "reboot", "on") == "on"  # ForceRestart: off at once, on again once applied
    assert act(driver, "off", "off") == "off"
    assert redfish_bmc.power_state(SYSTEMS["chosen"]) == "Off"
    assert redfish_bmc.power_state(SYSTEMS["first"]) == "Off"  # the first listed system was never touched


def test_redfish_refusals_name_the_request_and_status_never_the_password(tmp_path, redfish_bmc):
    wrong = "wrong-" + emulators.PASSWORD
    with pytest.raises(PowerError) as error:
        redfish(tmp_path, redfish_bmc, "spare", password=wrong).act("off")
    assert str(error.value) == (f"redfish GET /redfish/v1/Systems/{SYSTEMS['spare']} on {FQDN} answered "
                                "401 Unauthorized: Incorrect username or password")
    with pytest.raises(PowerError) as error:
        driver_for(target(tmp_path, **redfish_settings(redfish_bmc, "spare", id="no-such-system"))).act("off")
    assert str(error.value) == (f"redfish GET /redfish/v1/Systems/no-such-system on {FQDN} answered "
                                "404 NOT FOUND: Fake system no-such-system was not found")
    # Without the test CA the emulator's certificate is refused before anything is sent.
    with pytest.raises(PowerError, match=rf"^redfish GET /redfish/v1/Systems/\S+ on {FQDN}: SSLError$"):
        redfish(tmp_path, redfish_bmc, "spare", verify="true").act("off")
    assert redfish_bmc.power_state(SYSTEMS["spare"]) == "On"


@pytest.mark.timeout(30)
def test_redfish_bmc_that_does_not_answer_fails_within_the_timeout(tmp_path, redfish_bmc):
    with socket.socket() as silent:  # accepts connections (the kernel does), never says a word
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        url = f"https://127.0.0.1:{silent.getsockname()[1]}"
        started = time.monotonic()
        with pytest.raises(PowerError, match=rf"^redfish GET /redfish/v1/Systems/\S+ on {FQDN}: ReadTimeout$"):
            driver_for(target(tmp_path, timeout=1.0, **redfish_settings(redfish_bmc, "spare", url=url))).act("on")
        assert time.monotonic() - started < 5


@pytest.mark.timeout(120)
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # the queue is not what is tested here
def test_a_queued_power_command_reaches_the_redfish_bmc_and_records_the_state_it_took(db, tmp_path, redfish_bmc):
    with worker_lab(db, tmp_path, command_timeout=f"{SETTLE:g}s") as lab:
        lab.system("r1.lab.test", power=redfish_settings(redfish_bmc, "queued"))
        _, command = lab.admin.post("/systems/r1.lab.test/power", {"action": "off"})
        drain(lab)  # the worker's runner, as in its passes
    _, done = lab.admin.get(f"/commands/{command['id']}")
    assert (done["status"], done["error"]) == ("completed", None)
    # The BMC took a few seconds to apply it: the state recorded is the one it took, not the one before.
    assert lab.admin.get("/systems/r1.lab.test")[1]["power_state"] == "off"
    assert redfish_bmc.power_state(SYSTEMS["queued"]) == "Off"


@pytest.mark.timeout(60)
def test_redfish_interrupt_asks_the_bmc_for_an_nmi_and_says_what_it_answered(tmp_path, redfish_bmc):
    """An interrupt is a Reset with ResetType Nmi. sushy-emulator's fake systems have no processor to
    interrupt: it answers the Nmi 501 (its libvirt systems inject one); the refusal comes back naming the
    request and the machine is left as it was."""
    driver = redfish(tmp_path, redfish_bmc, "spare")
    with pytest.raises(PowerError) as error:
        driver.act("interrupt")
    assert str(error.value) == (f"redfish POST /redfish/v1/Systems/{SYSTEMS['spare']}/Actions/ComputerSystem.Reset"
                                " on s1.lab.test answered 501 NOT IMPLEMENTED: Power state Nmi is not supported")
    assert redfish_bmc.power_state(SYSTEMS["spare"]) == "On"


# --- ipmitool -------------------------------------------------------------------------------------------

def ipmi_settings(bmc, **extra) -> dict:
    return {"driver": "ipmitool", "address": "127.0.0.1", "port": bmc.port, "user": emulators.USER,
            "password": emulators.PASSWORD, "cipher_suite": bmc.CIPHER_SUITE, **extra}


@pytest.mark.timeout(60)
def test_ipmitool_lanplus_on_cycle_off_and_status(tmp_path, ipmi_bmc):
    driver = driver_for(target(tmp_path, **ipmi_settings(ipmi_bmc)))
    assert act(driver, "off", "off") == "off"
    start = len(ipmi_bmc.history)
    assert act(driver, "reboot", "on") == "on"  # off: powered on, not cycled
    assert (ipmi_bmc.power, ipmi_bmc.history[start:]) == ("on", ["on"])
    assert act(driver, "reboot", "on") == "on"  # on: a power cycle, off then on a second later
    assert (ipmi_bmc.power, ipmi_bmc.history[start:]) == ("on", ["on", "off", "on"])
    assert act(driver, "off", "off") == "off"
    assert (ipmi_bmc.power, ipmi_bmc.history[start:]) == ("off", ["on", "off", "on", "off"])


@pytest.mark.timeout(60)
def test_ipmitool_interrupt_is_a_diagnostic_interrupt_that_ipmi_sim_refuses(tmp_path, ipmi_bmc):
    """An interrupt is `chassis power diag` (a pulse of the diagnostic interrupt, an NMI). ipmi_sim implements
    no diagnostic interrupt: it answers the request with "Invalid data field", which the command reports; the
    chassis power is not touched."""
    driver = driver_for(target(tmp_path, **ipmi_settings(ipmi_bmc)))
    assert act(driver, "on", "on") == "on"
    before = ipmi_bmc.history
    with pytest.raises(PowerError) as error:
        driver.act("interrupt")
    assert str(error.value) == ("ipmitool exited with status 1: Set Chassis Power Control to Diag failed: "
                                "Invalid data field in request")
    assert (ipmi_bmc.power, ipmi_bmc.history) == ("on", before)


def test_ipmitool_wrong_password_is_refused_by_the_bmc_and_never_shown(tmp_path, ipmi_bmc):
    wrong = "wrong-s3cret"
    before = ipmi_bmc.history
    with pytest.raises(PowerError) as error:
        driver_for(target(tmp_path, **ipmi_settings(ipmi_bmc, password=wrong))).act("on")
    assert str(error.value) == "ipmitool exited with status 1: Error: Unable to establish IPMI v2 / RMCP+ session"
    assert ipmi_bmc.history == before


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_an_ipmi_password_longer_than_ipmi_holds_is_refused_when_the_system_is_added(lab):
    power = {"driver": "ipmitool", "address": "bmc.lab.test", "user": "admin", "password": "x" * 21}
    status, body = lab.admin.post("/systems", {"fqdn": "i2.lab.test", "arch": "x86_64", "condition": "manual",
                                              "power": power})
    assert status == 422 and "password is longer than the 20 bytes IPMI allows" in str(body)
    assert "x" * 21 not in str(body)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_queued_power_command_reaches_the_ipmi_bmc(db, tmp_path, ipmi_bmc):
    driver_for(target(tmp_path, **ipmi_settings(ipmi_bmc))).act("off")
    with worker_lab(db, tmp_path, command_timeout="20s") as lab:
        lab.system("i1.lab.test", power=ipmi_settings(ipmi_bmc))
        _, command = lab.admin.post("/systems/i1.lab.test/power", {"action": "reboot"})
        drain(lab)
    _, done = lab.admin.get(f"/commands/{command['id']}")
    assert (done["status"], done["error"]) == ("completed", None)
    assert lab.admin.get("/systems/i1.lab.test")[1]["power_state"] == "on"
    assert ipmi_bmc.power == "on"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_a_command_the_bmc_accepts_but_the_machine_never_follows_fails(db, tmp_path, ipmi_bmc):
    driver_for(target(tmp_path, **ipmi_settings(ipmi_bmc))).act("off")
    ipmi_bmc.stuck(True)
    try:
        with worker_lab(db, tmp_path, command_timeout="2s", command_max_attempts=1) as lab:
            lab.system("i3.lab.test", power=ipmi_settings(ipmi_bmc))
            _, command = lab.admin.post("/systems/i3.lab.test/power", {"action": "on"})
            drain(lab)
    finally:
        ipmi_bmc.stuck(False)
    _, done = lab.admin.get(f"/commands/{command['id']}")
    assert (done["status"], done["error"]) == (
        "failed", "ipmitool on i3.lab.test: the machine still reads off, not on, 2 s after the action")
    assert ipmi_bmc.power == "off"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)
def test_an_interrupt_asked_through_the_api_reaches_the_ipmi_bmc(db, tmp_path, ipmi_bmc):
    """POST /power {action: interrupt} queues it; the worker sends chassis power diag and records what
    ipmi_sim answered (it has no diagnostic interrupt); the machine keeps its power."""
    driver_for(target(tmp_path, **ipmi_settings(ipmi_bmc))).act("on")
    with worker_lab(db, tmp_path, command_timeout="20s", command_max_attempts=1) as lab:
        lab.system("i4.lab.test", power=ipmi_settings(ipmi_bmc))
        status, command = lab.admin.post("/systems/i4.lab.test/power", {"action": "interrupt"})
        assert status == 202 and command["action"] == "interrupt"
        drain(lab)
    _, done = lab.admin.get(f"/commands/{command['id']}")
    assert (done["status"], done["error"]) == (
        "failed", "ipmitool exited with status 1: Set Chassis Power Control to Diag failed: Invalid data field in "
                  "request")
    assert ipmi_bmc.power == "on"

