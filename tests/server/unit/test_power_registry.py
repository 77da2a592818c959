"""Power drivers are found through entry points, and bad power settings are refused with a reason."""
from pathlib import Path

import pytest

from lablease.power import PowerDriver, PowerError, PowerTarget
from lablease.power.registry import check_settings, driver_for, driver_names, load

BUILT_IN = ["command", "ipmitool", "libvirt", "redfish", "virtual"]


def target(**settings):
    return PowerTarget(fqdn="s1.lab.test", settings=settings, timeout=5, data_dir=Path("/nonexistent"),
                       scripts_dir=Path("/nonexistent"), tftp_root=Path("/nonexistent"), mac=None)


def test_every_built_in_driver_is_registered_as_an_entry_point():
    assert set(BUILT_IN) <= set(driver_names())
    for name in BUILT_IN:
        driver = load(name)
        assert issubclass(driver, PowerDriver) and driver.name == name


def test_an_unknown_driver_names_the_installed_ones():
    with pytest.raises(KeyError) as error:
        load("telepathy")
    assert str(error.value).startswith("unknown power driver 'telepathy' (installed: command, ipmitool")


@pytest.mark.parametrize("settings, message", [
    ({}, "power settings need a driver (one of: command, ipmitool"),
    ({"driver": "telepathy"}, "unknown power driver 'telepathy'"),
    ({"driver": "ipmitool", "address": "bmc1"}, "power driver ipmitool needs the setting(s) user"),
    ({"driver": "ipmitool", "address": "bmc1", "user": "u", "cipher_suite": "17; reboot"},
     "power setting cipher_suite must be an IPMI cipher suite number, 0 to 17"),
    ({"driver": "ipmitool", "address": "bmc1", "user": "u", "cipher_suite": 18},
     "power setting cipher_suite must be an IPMI cipher suite number, 0 to 17"),
    ({"driver": "ipmitool", "address": "bmc1", "user": "u", "password": "é" * 11},
     "power setting password is longer than the 20 bytes IPMI allows"),
    ({"driver": "ipmitool", "address": "bmc1", "user": "u", "password": "p" * 17, "interface": "lan"},
     "power setting password is longer than the 16 bytes IPMI allows"),
    ({"driver": "libvirt"}, "power driver libvirt needs the setting(s) address"),
    ({"driver": "redfish", "user": "u", "password": "p"}, "power driver redfish needs the setting address"),
    ({"driver": "command"}, "power driver command needs the setting(s) script"),
    ({"driver": "command", "script": "../bin/sh"}, "power script '../bin/sh' must be a plain file name"),
    ({"driver": "command", "script": "/bin/sh"}, "power script '/bin/sh' must be a plain file name"),
    ({"driver": "command", "script": "x..y"}, "power script 'x..y' must be a plain file name"),
    ({"driver": "command", "script": ".hidden"}, "power script '.hidden' must be a plain file name"),
    ({"driver": "virtual", "boot_delay": "soon"}, "power setting boot_delay must be a number of seconds"),
    ({"driver": "virtual", "install_delay": -1}, "power setting install_delay must be between 0 and 3600"),
])
def test_bad_settings_are_refused_with_a_reason(settings, message):
    with pytest.raises(ValueError) as error:
        check_settings(settings)
    assert str(error.value).startswith(message)


@pytest.mark.parametrize("settings", [
    {"driver": "ipmitool", "address": "bmc1", "user": "admin", "password": "pw", "port": 623},
    {"driver": "ipmitool", "address": "bmc1", "user": "admin", "password": "p" * 20, "cipher_suite": "3"},
    {"driver": "redfish", "address": "bmc1", "user": "admin", "password": "pw"},
    {"driver": "redfish", "url": "http://127.0.0.1:8000", "user": "admin", "password": "pw", "verify": False},
    {"driver": "libvirt", "address": "vm1", "uri": "qemu+ssh://host/system"},
    {"driver": "command", "script": "apc-pdu_2.sh"},
    {"driver": "virtual"},
    {"driver": "virtual", "boot_delay": 0, "install_delay": "0.5", "fail_install": True},
])
def test_good_settings_pass(settings):
    check_settings(settings)


def test_driver_for_builds_the_named_driver():
    driver = driver_for(target(driver="libvirt", address="vm1"))
    assert driver.name == "libvirt" and driver.target.fqdn == "s1.lab.test"


@pytest.mark.parametrize("settings, message", [
    ({}, "s1.lab.test has no power driver configured"),
    ({"driver": "telepathy"}, "s1.lab.test: unknown power driver 'telepathy'"),
])
def test_driver_for_without_a_usable_driver_is_a_power_error(settings, message):
    with pytest.raises(PowerError, match=message):
        driver_for(target(**settings))
