# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.lablease.lab.plugins.modules import power


def test_power_on_waits_for_the_command_and_then_is_not_changed(api, run):
    api.add_system("s1.lab.test", power_state="off")
    args = {"system": "s1.lab.test", "state": "on", "poll_interval": 0}
    result, failed = run(power.main, args, check=True, diff=True)
    assert result["changed"] and api.writes == [] and result["command"] is None and result["power_state"] == "on"
    assert result["diff"] == {"before": {"power_state": "off"}, "after": {"power_state": "on"}}
    api.command_polls[1] = [{"status": "running"}, {"status": "completed", "attempts": 1}]
    result, failed = run(power.main, args, diff=True)
    assert not failed and result["changed"] and api.writes == [("POST", "/systems/s1.lab.test/power", {"action": "on"})]
    assert result["command"]["status"] == "completed" and result["power_state"] == "on"
    assert result["diff"]["after"] == {"power_state": "on"}
    result, failed = run(power.main, args)
    assert not result["changed"] and result["command"] is None and len(api.writes) == 1
    result, failed = run(power.main, args, check=True)
    assert not result["changed"]
    api.command_polls[2] = [{"status": "completed"}]
    result, failed = run(power.main, dict(args, force=True))
    assert result["changed"] and len(api.writes) == 2


def test_power_off_and_reboot(api, run):
    api.add_system("s1.lab.test", power_state="on")
    args = {"system": "s1.lab.test", "state": "off", "poll_interval": 0}
    api.command_polls[1] = [{"status": "completed"}]
    result, failed = run(power.main, args)
    assert result["changed"] and result["power_state"] == "off" and api.systems["s1.lab.test"]["power_state"] == "off"
    result, failed = run(power.main, args)
    assert not result["changed"] and len(api.writes) == 1
    # reboot always does something; without wait the command is returned queued
    for attempt in range(2):
        result, failed = run(power.main, dict(args, state="reboot", wait=False))
        assert result["changed"] and result["command"]["status"] == "queued" and result["power_state"] == "off"
    assert api.writes[1:] == [("POST", "/systems/s1.lab.test/power", {"action": "reboot"})] * 2
    result, failed = run(power.main, dict(args, state="reboot"), check=True)
    assert result["changed"] and result["power_state"] == "on" and len(api.writes) == 3


def test_power_unknown_state_acts(api, run):
    api.add_system("s1.lab.test")
    api.command_polls[1] = [{"status": "completed"}]
    result, failed = run(power.main, {"system": "s1.lab.test", "state": "off", "poll_interval": 0})
    assert result["changed"] and result["power_state"] == "off"


def test_power_fails_with_the_command_error_and_on_timeout(api, run):
    api.add_system("s1.lab.test", power_state="off")
    args = {"system": "s1.lab.test", "state": "on", "poll_interval": 0}
    api.command_polls[1] = [{"status": "running", "attempts": 1},
                            {"status": "failed", "attempts": 3, "error": "ipmitool: connection timed out"}]
    result, failed = run(power.main, args)
    assert failed and result["changed"] and result["command"]["status"] == "failed"
    assert result["msg"] == "s1.lab.test: power on (command 1) failed after 3 attempt(s): ipmitool: connection timed out"
    result, failed = run(power.main, dict(args, wait_timeout=0))
    assert failed and result["changed"] and result["command"]["id"] == 2
    assert result["msg"] == "s1.lab.test: power on (command 2) is still queued after waiting 0 s"


def test_power_bad_input(api, run):
    result, failed = run(power.main, {"system": "s1.lab.test", "state": "sideways"})
    assert failed and "state" in result["msg"] and "sideways" in result["msg"]
    result, failed = run(power.main, {"system": "s1.lab.test", "state": "on", "poll_interval": -2})
    assert failed and result["msg"] == "poll_interval: must be 0 or more, not -2"
    result, failed = run(power.main, {"system": "nope.lab.test", "state": "on"})
    assert failed and "no system named nope.lab.test" in result["msg"]
