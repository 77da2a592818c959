# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.lablease.lab.plugins.module_utils import client as client_module
from ansible_collections.lablease.lab.plugins.modules import distro_tree, provision
from ansible_collections.lablease.lab.tests.unit.plugins.fake_api import NOW, iso

TREE = {"name": "Fedora-40", "arch": "x86_64", "variant": "Server", "family": "Fedora40",
        "tree_url": "http://mirror.lab.test/f40/", "kernel": "images/pxeboot/vmlinuz", "initrd": "images/pxeboot/initrd.img",
        "tags": ["RELEASED", "STABLE"], "labs": ["lab1"]}


def test_distro_tree_add_keep_change_remove(api, run):
    api.admin = True
    result, failed = run(distro_tree.main, TREE, check=True)
    assert result["changed"] and result["distro_tree"]["id"] is None and api.writes == []
    assert result["distro_tree"]["tags"] == ["RELEASED", "STABLE"] and result["distro_tree"]["ks_meta"] is None
    result, failed = run(distro_tree.main, TREE, diff=True)
    body = dict(TREE, url=TREE["tree_url"])
    del body["tree_url"]
    assert result["changed"] and api.writes == [("POST", "/distro-trees", body)]
    assert result["diff"]["before"] == {} and result["diff"]["after"]["family"] == "Fedora40"
    # same again, tags in another order, null ks_meta asked as "": nothing to do
    result, failed = run(distro_tree.main, dict(TREE, tags=["STABLE", "RELEASED"], ks_meta=""))
    assert not result["changed"] and len(api.writes) == 1 and result["distro_tree"]["id"] == 1
    # only what differs is sent
    args = {"name": "Fedora-40", "arch": "x86_64", "variant": "Server", "kernel_options": "inst.text",
            "tags": ["RELEASED"], "tree_url": TREE["tree_url"]}
    result, failed = run(distro_tree.main, args, check=True, diff=True)
    assert result["changed"] and len(api.writes) == 1 and result["diff"]["after"]["tags"] == ["RELEASED"]
    result, failed = run(distro_tree.main, args, diff=True)
    assert result["changed"] and api.writes[-1] == ("PATCH", "/distro-trees/1",
                                                    {"kernel_options": "inst.text", "tags": ["RELEASED"]})
    assert result["diff"]["before"]["kernel_options"] is None and result["diff"]["after"]["kernel_options"] == "inst.text"
    assert api.distro_trees[1]["url"] == TREE["tree_url"]
    result, failed = run(distro_tree.main, args)
    assert not result["changed"] and len(api.writes) == 2
    gone = {"name": "Fedora-40", "arch": "x86_64", "variant": "Server", "state": "absent"}
    result, failed = run(distro_tree.main, gone, check=True)
    assert result["changed"] and 1 in api.distro_trees
    result, failed = run(distro_tree.main, gone, diff=True)
    assert result["changed"] and result["distro_tree"] is None and api.writes[-1] == ("DELETE", "/distro-trees/1", None)
    assert result["diff"]["before"]["name"] == "Fedora-40" and result["diff"]["after"] == {}
    result, failed = run(distro_tree.main, gone)
    assert not result["changed"] and len(api.writes) == 3


def test_distro_tree_is_found_by_name_arch_and_variant(api, run):
    api.admin = True
    api.add_distro_tree("Fedora-40", variant="Server")
    api.add_distro_tree("Fedora-40", arch="aarch64")
    # no variant: the tree without one, never the Server tree
    result, failed = run(distro_tree.main, {"name": "Fedora-40", "arch": "x86_64", "tree_url": "http://m/",
                                            "kernel": "k", "initrd": "i"})
    assert result["changed"] and api.writes[-1][:2] == ("POST", "/distro-trees") and "variant" not in api.writes[-1][2]
    result, failed = run(distro_tree.main, {"name": "Fedora-40", "arch": "aarch64", "variant": "", "family": "F40"})
    assert result["changed"] and api.writes[-1] == ("PATCH", "/distro-trees/2", {"family": "F40"})


def test_distro_tree_needs_url_kernel_initrd_to_add_and_an_admin(api, run):
    result, failed = run(distro_tree.main, {"name": "Fedora-40", "arch": "x86_64", "tree_url": "http://m/"}, check=True)
    assert failed and result["msg"] == "kernel, initrd: needed to add distro tree Fedora-40 x86_64"
    result, failed = run(distro_tree.main, dict(TREE))
    assert failed and result["msg"] == "not allowed: only administrators may register distro trees"
    assert result["status"] == 403


def holding(api, reservation=5):
    api.add_system("s1.lab.test", reservation={"id": reservation, "user": "alice"})
    api.add_distro_tree("Fedora-40", variant="Server")
    api.add_distro_tree("Fedora-40", variant="Workstation")


ARGS = {"system": "s1.lab.test", "distro": "Fedora-40", "variant": "Server", "ks_meta": "harness=restraint",
        "poll_interval": 0}


def test_provision_waits_until_running_and_keeps_it(api, run):
    holding(api)
    api.installation_polls[1] = [{"status": "installing"}, {"status": "installed"}, {"status": "running"}]
    result, failed = run(provision.main, ARGS, diff=True)
    assert not failed and result["changed"] and result["installation"]["status"] == "running"
    assert api.writes == [("POST", "/systems/s1.lab.test/provision",
                           {"distro_tree": "Fedora-40", "variant": "Server", "ks_meta": "harness=restraint"})]
    assert [c[1] for c in api.calls].count("/installations/1") == 3
    assert result["diff"]["before"] == {} and result["diff"]["after"]["distro"] == "Fedora-40"
    # the same request during the same reservation: kept (white space does not matter)
    result, failed = run(provision.main, dict(ARGS, ks_meta="  harness=restraint "), diff=True)
    assert not result["changed"] and len(api.writes) == 1 and result["installation"]["id"] == 1
    assert result["diff"]["before"] == result["diff"]["after"]
    result, failed = run(provision.main, dict(ARGS, variant=None, arch="x86_64"), check=True)
    assert not result["changed"]
    # force, other ks_meta, other kernel_options, another variant: installs again
    for changes in ({"force": True}, {"ks_meta": ""}, {"kernel_options": "quiet"}, {"variant": "Workstation"}):
        result, failed = run(provision.main, dict(ARGS, wait=False, **changes))
        assert result["changed"], changes
    assert len(api.writes) == 5 and api.installations[5]["distro_tree"]["variant"] == "Workstation"


def test_provision_again_after_a_new_reservation_or_a_failure(api, run):
    holding(api)
    tree = api.distro_trees[1]
    api.add_installation("s1.lab.test", tree, reservation=4, ks_meta="harness=restraint")
    result, failed = run(provision.main, dict(ARGS, wait=False))
    assert result["changed"] and result["installation"]["reservation"] == 5
    assert result["installation"]["status"] == "queued" and "kickstart_url" not in result["installation"]
    api.add_installation("s1.lab.test", tree, status="failed", reservation=5, ks_meta="harness=restraint")
    result, failed = run(provision.main, dict(ARGS, wait=False))
    assert result["changed"] and len(api.writes) == 2


def test_provision_check_mode_installs_nothing_but_checks_the_tree(api, run):
    holding(api)
    result, failed = run(provision.main, ARGS, check=True, diff=True)
    assert result["changed"] and api.writes == [] and result["installation"]["id"] is None
    assert result["installation"]["distro_tree"] == {"id": 1, "name": "Fedora-40", "arch": "x86_64", "variant": "Server"}
    assert result["installation"]["reservation"] == 5 and result["diff"]["after"]["ks_meta"] == "harness=restraint"
    assert api.calls[-1][:2] == ("POST", "/systems/s1.lab.test/provision")  # asked with ?validate_only=true
    result, failed = run(provision.main, dict(ARGS, distro="Fedora-99"), check=True)  # the server's refusal
    assert failed and result["status"] == 422 and result["msg"] == "distro_tree: no distro tree Fedora-99 for x86_64"
    api.systems["s1.lab.test"]["reservation"]["user"] = "bob"
    result, failed = run(provision.main, ARGS, check=True)
    assert failed and result["status"] == 403 and "only the current holder" in result["msg"]
    assert api.writes == [] and api.installations == {}


def test_provision_waits_for_a_kept_installation(api, run):
    holding(api)
    api.add_installation("s1.lab.test", api.distro_trees[1], status="installing", reservation=5,
                         ks_meta="harness=restraint")
    api.installation_polls[1] = [{"status": "installed"}, {"status": "running"}]
    result, failed = run(provision.main, ARGS)
    assert not result["changed"] and result["installation"]["status"] == "running" and api.writes == []


def test_provision_fails_with_the_installation_error_and_on_timeout(api, run):
    holding(api)
    api.installation_polls[1] = [{"status": "installing"},
                                 {"status": "failed", "error": "anaconda: no space left on device"}]
    result, failed = run(provision.main, ARGS)
    assert failed and result["changed"] and result["installation"]["status"] == "failed"
    assert result["msg"] == ("s1.lab.test: installation 1 of Fedora-40 x86_64 Server failed: "
                             "anaconda: no space left on device")
    api.installation_polls[2] = [{"status": "cancelled"}]
    result, failed = run(provision.main, ARGS)
    assert failed and result["msg"] == "s1.lab.test: installation 2 of Fedora-40 x86_64 Server cancelled: no error given"
    result, failed = run(provision.main, dict(ARGS, wait_timeout=0))
    assert failed and result["changed"] and result["installation"]["id"] == 3
    assert result["msg"] == "s1.lab.test: installation 3 of Fedora-40 x86_64 Server is still queued after waiting 0 s"
    # the same task again waits for that installation instead of starting another
    api.installation_polls[3] = [{"status": "running"}]
    result, failed = run(provision.main, ARGS)
    assert not failed and not result["changed"] and len(api.writes) == 3


def test_provision_bad_input_and_refusals(api, run):
    result, failed = run(provision.main, {"system": "s1.lab.test", "distro": " "})
    assert failed and result["msg"] == "distro: give the name of a distro tree"
    result, failed = run(provision.main, dict(ARGS, wait_timeout=-1))
    assert failed and result["msg"] == "wait_timeout: must be 0 or more, not -1"
    result, failed = run(provision.main, {"system": "s1.lab.test"})
    assert failed and "distro" in result["msg"]
    result, failed = run(provision.main, ARGS)
    assert failed and "no system named s1.lab.test" in result["msg"]
    api.add_system("s1.lab.test", reservation={"id": 9, "user": "bob"})
    api.add_distro_tree("Fedora-40", variant="Server")
    result, failed = run(provision.main, ARGS)
    assert failed and result["status"] == 403 and result["msg"] == (
        "not allowed: only the current holder of s1.lab.test may provision it; reserve it first")
    api.systems["s1.lab.test"]["reservation"] = {"id": 10, "user": "alice"}
    result, failed = run(provision.main, dict(ARGS, variant="Minimal"))
    assert failed and result["status"] == 422 and "no distro tree Fedora-40" in result["msg"]


def heartbeating(api, heartbeat=30):
    """s1.lab.test held by alice's reservation 1, made with a heartbeat of `heartbeat` seconds."""
    api.add_system("s1.lab.test")
    reservation = api.add_reservation("s1.lab.test")
    reservation.update(heartbeat=heartbeat, last_heartbeat=reservation["start"])
    api.systems["s1.lab.test"]["reservation"] = {"id": reservation["id"], "user": "alice"}
    api.add_distro_tree("Fedora-40", variant="Server")
    return reservation


def test_provision_keeps_a_heartbeat_reservation_alive_while_it_waits(api, run, monkeypatch):
    reservation = heartbeating(api)
    slept = []
    monkeypatch.setattr(client_module.time, "sleep", slept.append)
    api.installation_polls[1] = [{"status": "installing"}, {"status": "installed"}, {"status": "running"}]
    result, failed = run(provision.main, dict(ARGS, poll_interval=60))
    assert not failed and result["changed"] and result["installation"]["status"] == "running"
    # a heartbeat after each look that found it unfinished, none once it runs
    looks = [c[:2] for c in api.calls if c[1] in ("/installations/1", "/reservations/1/heartbeat")]
    assert looks == [("GET", "/installations/1"), ("POST", "/reservations/1/heartbeat")] * 2 + [
        ("GET", "/installations/1")]
    assert reservation["last_heartbeat"] == iso(NOW)
    # at least every third of the heartbeat interval, even with a longer poll_interval
    assert slept == [10.0, 10.0]

    # a kept installation that is still installing: waited for, with heartbeats too
    api.add_installation("s1.lab.test", api.distro_trees[1], status="installed", reservation=1,
                         ks_meta="harness=restraint")
    api.installation_polls[2] = [{"status": "installed"}, {"status": "installed"}, {"status": "running"}]
    del slept[:]
    result, failed = run(provision.main, dict(ARGS, poll_interval=2))
    assert not failed and not result["changed"] and result["installation"]["id"] == 2
    assert [c[1] for c in api.writes] == ["/systems/s1.lab.test/provision", "/reservations/1/heartbeat",
                                          "/reservations/1/heartbeat", "/reservations/1/heartbeat"]
    assert slept == [2]


def test_provision_sends_no_heartbeat_without_one_or_in_check_mode(api, run, monkeypatch):
    reservation = heartbeating(api)
    reservation["heartbeat"] = None
    slept = []
    monkeypatch.setattr(client_module.time, "sleep", slept.append)
    api.installation_polls[1] = [{"status": "installing"}, {"status": "running"}]
    result, failed = run(provision.main, dict(ARGS, poll_interval=60))
    assert not failed and [c[1] for c in api.writes] == ["/systems/s1.lab.test/provision"] and slept == [60]
    reservation["heartbeat"] = 30
    result, failed = run(provision.main, dict(ARGS, force=True), check=True)
    assert result["changed"] and len(api.writes) == 1
    result, failed = run(provision.main, dict(ARGS, force=True, wait=False))
    assert result["changed"] and [c[1] for c in api.writes][1:] == ["/systems/s1.lab.test/provision"]


def test_provision_fails_when_the_heartbeat_is_refused(api, run):
    reservation = heartbeating(api)

    def returned_meanwhile():
        reservation.update(returned_at=iso(NOW), state="returned")
        return {"status": "installing"}

    api.installation_polls[1] = [returned_meanwhile]
    result, failed = run(provision.main, ARGS)
    assert failed and result["changed"] and result["status"] == 409 and result["installation"]["id"] == 1
    assert result["msg"] == ("s1.lab.test: installation 1 of Fedora-40 x86_64 Server is still installing, "
                             "but the heartbeat of reservation 1 failed: reservation 1 was already returned")


def test_provision_refuses_who_does_not_hold_the_system_even_when_the_request_matches(api, run):
    holding(api)  # alice's reservation 5, whose latest installation asked for the same
    api.add_installation("s1.lab.test", api.distro_trees[1], reservation=5, ks_meta="harness=restraint")
    result, failed = run(provision.main, ARGS)
    assert not failed and not result["changed"]
    api.user = "bob"
    for check in (True, False):
        result, failed = run(provision.main, ARGS, check=check)
        assert failed and result["status"] == 403, check
        assert result["msg"] == "not allowed: only the current holder of s1.lab.test may provision it; reserve it first"
    # check mode asks nothing of the server; the real run asks, and the server refuses
    assert [c[:2] for c in api.writes] == [("POST", "/systems/s1.lab.test/provision")]
    assert list(api.installations) == [1]


def test_provision_never_returns_the_kickstart_or_its_url(api, run):
    """The server shows the rendered kickstart (passwords, keys) to the installation's people and answers a
    provision with the kickstart's URL and secret token once; a task's result lands in logs: neither comes out of
    it, however the task ends (started, waited for, kept, failed)."""
    holding(api)
    api.installation_polls[1] = [{"status": "installing"}, {"status": "running"}]
    api.installation_polls[2] = [{"status": "failed", "error": "the installer stopped"}]
    outcomes = [run(provision.main, dict(ARGS, wait=False)), run(provision.main, ARGS),
                run(provision.main, ARGS), run(provision.main, dict(ARGS, force=True))]
    expected = [(True, False), (False, False), (False, False), (True, True)]
    assert [(r["changed"], failed) for r, failed in outcomes] == expected
    for result, failed in outcomes:
        assert sorted(result["installation"]) == sorted(provision.RETURNED)
        assert "kickstart" not in json.dumps(result) and "secret" not in json.dumps(result), result
