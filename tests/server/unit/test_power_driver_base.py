"""PowerDriver.act: one error type out, with the system's secrets scrubbed from it."""
from pathlib import Path

import pytest

from lablease.power import PowerDriver, PowerError, PowerTarget, scrub


class LeakyDriver(PowerDriver):
    """A driver whose failures quote its own settings, as careless library errors do."""

    name = "leaky"
    secrets = ("password", "token")

    def on(self):
        raise RuntimeError(f"login as {self.settings['user']}:{self.settings['password']} refused")

    def off(self):
        raise PowerError(f"bmc said token {self.settings['token']} expired")

    def reboot(self):
        self.rebooted = True


def leaky():
    settings = {"driver": "leaky", "user": "admin", "password": "hunter2", "token": "t0k3n"}
    return LeakyDriver(PowerTarget("s1.lab.test", settings, 5, Path("."), Path("."), Path("."), None))


def test_unexpected_errors_become_power_errors_without_secrets():
    with pytest.raises(PowerError) as error:
        leaky().act("on")
    assert str(error.value) == "leaky on on s1.lab.test: RuntimeError: login as admin:*** refused"
    assert error.value.__cause__ is None and error.value.__suppress_context__


def test_power_errors_are_scrubbed_too():
    with pytest.raises(PowerError, match=r"^bmc said token \*\*\* expired$"):
        leaky().act("off")


def test_act_dispatches_and_refuses_unknown_actions():
    driver = leaky()
    driver.act("reboot")
    assert driver.rebooted
    with pytest.raises(PowerError, match="unknown power action 'explode'"):
        driver.act("explode")


def test_scrub_covers_a_secret_inside_another():
    assert scrub("pass=abc abcdef", ["abc", "abcdef", "", None]) == "pass=*** ***"
