"""`lablease provision`, `installations`, `installation`, `power`, `commands` and `distro ...` against a real server.

The package's server runs no worker: installations and commands stay queued
there, which is what most tests need (and what `--timeout` gives up on).
Following them to the end (`--wait`) needs the worker and its simulated
machines: the `worker` server below has both, and only the two tests that
wait use it (each install takes about 2 s of real netbooting and callbacks).
"""
from __future__ import annotations

import itertools
import json
import re
import xml.etree.ElementTree as ET
from datetime import datetime

import pytest

from lablease.cli import client_provisioning
from lablease.cli.client_status import ExitStatus
from lablease.domain.times import format_when
from tests.support.live import LiveServer

TREE = {"name": "ProvOS-1", "family": "ProvOS1", "variant": "Server", "arch": "x86_64",
        "url": "http://mirror.lab.test/provos/1/", "kernel": "images/vmlinuz", "initrd": "images/initrd.img"}
FAST = ("--interval", "0.05")
_macs = itertools.count(1)


def power(fail: bool = False) -> dict:
    found = {"driver": "virtual", "boot_delay": 0.2, "install_delay": 0.5}
    return {**found, "fail_install": True} if fail else found


def provisionable(server, fqdn: str, fail: bool = False) -> str:
    """A system with a (virtual) power driver and a MAC address: what provisioning needs."""
    n = next(_macs)
    mac = f"52:54:00:c1:{n // 256:02x}:{n % 256:02x}"
    response = server.admin.post("/systems", json={"fqdn": fqdn, "arch": "x86_64", "power": power(fail),
                                                   "netboot": {"mac": mac}})
    assert response.status_code == 201, response.text
    return fqdn


@pytest.fixture(scope="module")
def tree(server) -> dict:
    response = server.admin.post("/distro-trees", json=TREE)
    assert response.status_code == 201, response.text
    return response.json()


@pytest.fixture
def held(cli, server, tree):
    """A provisionable system reserved by bob."""

    def make(fqdn: str) -> str:
        provisionable(server, fqdn)
        cli.ok("reserve", fqdn, "--duration", "1h", user="bob")
        return fqdn

    return make


def block(text: str) -> dict[str, list[str]]:
    """The `label:  value` lines of a block, each label's values in order."""
    found: dict[str, list[str]] = {}
    for line in text.splitlines():
        if ":  " in line:
            label, _, value = line.partition(":")
            found.setdefault(label.strip(), []).append(value.strip())
    return found


def one_line(result, code: int, start: str) -> None:
    """The failure convention: the exit status, one `lablease: ...` line on stderr."""
    assert result.code == code, result
    assert result.err.startswith(f"lablease: {start}") and result.err.count("\n") == 1, result.err


# --- provision -----------------------------------------------------------------------------------

def test_provision_prints_the_installation_but_its_url_only_when_asked(cli, held, tree):
    fqdn = held("pv1.lab.test")
    result = cli.ok("provision", fqdn, "ProvOS-1", "--ks-meta", "packages=git", "--kernel-options", "quiet",
                    user="bob")
    fields = block(result.out)
    assert fields["system"] == [fqdn] and fields["user"] == ["bob"] and fields["status"] == ["queued"]
    assert fields["distro tree"] == [f"ProvOS-1 x86_64 Server (id {tree['id']})"]
    assert fields["ks meta"] == ["packages=git"] and fields["kernel options"] == ["quiet"]
    assert "kickstart url" not in fields and "token" not in result.out
    # by id, with the URL: it carries the installation's token
    shown = block(cli.ok("provision", fqdn, str(tree["id"]), "--show-url", user="bob").out)
    assert re.fullmatch(rf"http://\S+/api/v1/installations/{shown['id'][0]}/kickstart\?token=[\w-]+",
                        shown["kickstart url"][0])
    as_json = json.loads(cli.ok("provision", fqdn, "ProvOS-1", "--arch", "x86_64", "--variant", "Server",
                                "--json", user="bob").out)
    assert as_json["status"] == "queued" and "kickstart_url" not in as_json
    assert as_json["distro_tree"] == {"id": tree["id"], "name": "ProvOS-1", "arch": "x86_64", "variant": "Server"}
    with_url = json.loads(cli.ok("provision", fqdn, "ProvOS-1", "--json", "--show-url", user="bob").out)
    assert "?token=" in with_url["kickstart_url"]
    root = ET.fromstring(cli.ok("--xml", "provision", fqdn, "ProvOS-1", user="bob").out)
    assert root.tag == "installation" and root.findtext("distro_tree/name") == "ProvOS-1"
    assert root.find("kickstart_url") is None
    # each new installation superseded the one before
    rows = json.loads(cli.ok("installations", fqdn, "--json", user="bob").out)
    assert [r["status"] for r in rows] == ["queued"] + ["cancelled"] * 4


def test_only_the_holder_may_provision(cli, server, held, tree):
    fqdn = held("pv2.lab.test")
    result = cli("provision", fqdn, "ProvOS-1", user="carol")
    assert result.out == ""
    one_line(result, ExitStatus.FORBIDDEN, f"only the current holder of {fqdn} may provision it; reserve it first")
    free = provisionable(server, "pv3.lab.test")
    one_line(cli("provision", free, "ProvOS-1"), ExitStatus.FORBIDDEN, f"only the current holder of {free}")


def test_what_the_server_refuses_has_its_exit_status(cli, server, add_system, held, tree):
    fqdn = held("pv4.lab.test")
    one_line(cli("provision", fqdn, "NoSuchOS", user="bob"), ExitStatus.INVALID, "distro_tree: no distro tree NoSuchOS")
    one_line(cli("provision", fqdn, "999999", user="bob"), ExitStatus.INVALID, "distro_tree: no distro tree 999999")
    one_line(cli("provision", "pv-missing.lab.test", "ProvOS-1", user="bob"), ExitStatus.NOT_FOUND, "")
    bare = add_system("pv5.lab.test")  # no power driver, no MAC
    cli.ok("reserve", bare, "--duration", "1h", user="bob")
    one_line(cli("provision", bare, "ProvOS-1", user="bob"), ExitStatus.CONFLICT,
             f"{bare} has no power driver configured, so it cannot be provisioned")
    one_line(cli("power", bare, "on", user="bob"), ExitStatus.CONFLICT, f"{bare} has no power driver configured")
    # an interrupt (NMI) needs a driver that can send one; the virtual machine's cannot
    one_line(cli("power", fqdn, "interrupt", user="bob"), ExitStatus.CONFLICT,
             f"{fqdn}: power driver virtual cannot send an interrupt (NMI): only ipmitool, redfish, libvirt and "
             "qemu can")


def test_wait_gives_up_after_the_timeout_with_9(cli, held):
    fqdn = held("pv6.lab.test")  # no worker here: the installation stays queued
    result = cli("provision", fqdn, "ProvOS-1", "--timeout", "0.3", *FAST, user="bob")
    fields = block(result.out)  # the installation was printed first: its id is what to look at later
    assert fields["status"] == ["queued"]
    one_line(result, ExitStatus.TIMED_OUT, f"installation {fields['id'][0]} of {fqdn} is not running after 0.3s; "
                                           "it is queued")
    as_json = cli("provision", fqdn, "ProvOS-1", "--wait", "--timeout", "0.2", *FAST, "--json", user="bob")
    assert as_json.code == ExitStatus.TIMED_OUT and json.loads(as_json.out)["status"] == "queued"
    command = cli("power", fqdn, "off", "--timeout", "0.2", *FAST, "--json", user="bob")
    assert command.code == ExitStatus.TIMED_OUT and json.loads(command.out)["action"] == "off"
    assert command.err.endswith(f"(off of {fqdn}) is not completed after 0.2s; it is queued\n")


def test_ctrl_c_while_waiting_names_what_goes_on(cli, held, monkeypatch):
    fqdn = held("pv9.lab.test")

    def interrupted(seconds):
        raise KeyboardInterrupt

    monkeypatch.setattr(client_provisioning, "sleep", interrupted)
    result = cli("provision", fqdn, "ProvOS-1", "--wait", "--json", user="bob")
    assert (result.code, result.out) == (ExitStatus.INTERRUPTED, "")
    installation_id = json.loads(cli.ok("installations", fqdn, "--json").out)[0]["id"]
    assert result.err == f"lablease: interrupted; installation {installation_id} of {fqdn} goes on (queued)\n"
    command = cli("power", fqdn, "on", "--wait", user="bob")
    assert command.code == ExitStatus.INTERRUPTED
    assert re.fullmatch(rf"lablease: interrupted; command \d+ \(on of {re.escape(fqdn)}\) goes on \(queued\)\n",
                        command.err)


# --- installations -------------------------------------------------------------------------------

def test_installations_table_and_one_installation(cli, held, tree):
    fqdn = held("pv7.lab.test")
    first = json.loads(cli.ok("provision", fqdn, "ProvOS-1", "--json", user="bob").out)
    second = json.loads(cli.ok("provision", fqdn, "ProvOS-1", "--ks-meta", "x=1", "--json", user="bob").out)
    # installations are their requester's, holder's, owner's and admins' (docs/access.md): carol, who may
    # see the system, sees none of them
    assert json.loads(cli.ok("installations", fqdn, "--json", user="carol").out) == []
    result = cli.ok("installations", fqdn, user="bob")
    assert result.lines[0].split() == ["ID", "DISTRO", "ARCH", "VARIANT", "USER", "RECIPE", "STATUS", "CREATED",
                                       "FINISHED", "ERROR"]
    assert [line.split()[:7] for line in result.lines[1:]] == [
        [str(second["id"]), "ProvOS-1", "x86_64", "Server", "bob", "-", "queued"],
        [str(first["id"]), "ProvOS-1", "x86_64", "Server", "bob", "-", "cancelled"]]
    assert result.lines[2].endswith("superseded by a new installation at " +
                                    format_when(datetime.fromisoformat(second["created_at"])))
    assert len(json.loads(cli.ok("installations", fqdn, "--limit", "1", "--json").out)) == 1
    root = ET.fromstring(cli.ok("installations", fqdn, "--xml").out)
    assert root.tag == "installations" and [i.findtext("id") for i in root.findall("installation")] == \
        [str(second["id"]), str(first["id"])]

    shown = block(cli.ok("installation", str(second["id"]), user="bob").out)
    assert shown["id"] == [str(second["id"])] and shown["ks meta"] == ["x=1"] and "kickstart" not in shown
    kickstart = cli.ok("installation", str(second["id"]), "--kickstart", user="bob").out
    assert kickstart.startswith(f"# lablease kickstart for {fqdn}: ProvOS-1 Server x86_64\n")
    assert set(re.findall(r"token=([^'\s&]*)", kickstart)) == {"<token>"}  # the token is never shown
    assert json.loads(cli.ok("installation", str(second["id"]), "--kickstart", "--json").out)["kickstart"] == \
        kickstart  # printed as stored
    # carol may see the system, not its installations: to her they do not exist (as an unknown id)
    one_line(cli("installation", str(second["id"]), "--kickstart", user="carol"), ExitStatus.NOT_FOUND,
             f"no installation {second['id']}")
    one_line(cli("installation", "999999"), ExitStatus.NOT_FOUND, "no installation 999999")


# --- power and commands --------------------------------------------------------------------------

def test_power_queues_a_command_and_commands_lists_them(cli, held):
    fqdn = held("pv8.lab.test")
    installation = json.loads(cli.ok("provision", fqdn, "ProvOS-1", "--json", user="bob").out)
    fields = block(cli.ok("power", fqdn, "off", user="bob").out)
    assert (fields["system"], fields["action"], fields["status"], fields["user"]) == \
        ([fqdn], ["off"], ["queued"], ["bob"])
    result = cli.ok("commands", fqdn, user="bob")
    assert result.lines[0].split() == ["ID", "ACTION", "STATUS", "ATTEMPTS", "CREATED", "FINISHED", "ERROR"]
    cells = [re.split(r"\s{2,}", line.strip()) for line in result.lines[1:]]  # a time holds single spaces
    assert [row[1:4] + row[5:] for row in cells] == [
        ["off", "queued", "0", "-", "-"], ["reboot", "queued", "0", "-", "-"],
        ["netboot_install", "queued", "0", "-", "-"]]
    listed = json.loads(cli.ok("commands", fqdn, "--json").out)
    assert [c["installation"] for c in listed] == [None, installation["id"], installation["id"]]
    assert len(json.loads(cli.ok("commands", fqdn, "--limit", "2", "--json").out)) == 2
    root = ET.fromstring(cli.ok("commands", fqdn, "--xml").out)
    assert root.tag == "commands" and root.findtext("command/action") == "off"
    assert ET.fromstring(cli.ok("power", fqdn, "on", "--xml", user="bob").out).findtext("action") == "on"
    one_line(cli("power", fqdn, "reboot", user="carol"), ExitStatus.FORBIDDEN,
             f"controlling the power of {fqdn} needs control_system or reserving it")


def test_command_cancel_ends_a_queued_command_and_fails_its_installation(cli, held):
    fqdn = held("pvc1.lab.test")
    installation = json.loads(cli.ok("provision", fqdn, "ProvOS-1", "--json", user="bob").out)
    netboot_install = min(c["id"] for c in json.loads(cli.ok("commands", fqdn, "--json").out))
    one_line(cli("command", "cancel", str(netboot_install), user="bob"), ExitStatus.FORBIDDEN,
             "only administrators may cancel commands")
    result = cli.ok("command", "cancel", str(netboot_install))
    assert result.out == f"cancelled command {netboot_install} (netboot_install of {fqdn})\n"
    assert json.loads(cli.ok("installation", str(installation["id"]), "--json").out)["status"] == "failed"
    one_line(cli("command", "cancel", str(netboot_install)), ExitStatus.CONFLICT,
             f"command {netboot_install} is already cancelled")
    one_line(cli("command", "cancel", "999999"), ExitStatus.NOT_FOUND, "no command 999999")


# --- distro trees --------------------------------------------------------------------------------

def test_distro_add_and_remove_as_an_administrator(cli, server):
    result = cli.ok("--url", server.url, "distro", "add", "CliProv-2", "--arch", "aarch64",
                    "--url", "http://mirror.lab.test/cp2/", "--kernel", "k", "--initrd", "i", "--family", "CliProv2",
                    "--variant", "Everything", "--ks-meta", "a=b", "--kernel-options", "console=ttyS0",
                    "--tag", "RELEASED", "--tag", "STABLE", "--lab", "brno", "--lab", "raleigh")
    fields = block(result.out)
    assert (fields["name"], fields["family"], fields["variant"], fields["arch"]) == \
        (["CliProv-2"], ["CliProv2"], ["Everything"], ["aarch64"])
    assert (fields["url"], fields["kernel"], fields["initrd"]) == (["http://mirror.lab.test/cp2/"], ["k"], ["i"])
    assert (fields["tags"], fields["labs"], fields["ks meta"], fields["kernel options"]) == \
        (["RELEASED, STABLE"], ["brno, raleigh"], ["a=b"], ["console=ttyS0"])
    tree_id = fields["id"][0]
    listed = cli.ok("distros", "--name", "CliProv-2", user="bob")
    assert listed.lines[0].split() == ["ID", "NAME", "FAMILY", "VARIANT", "ARCH", "TAGS", "LABS"]
    assert re.split(r"\s{2,}", listed.lines[1]) == [tree_id, "CliProv-2", "CliProv2", "Everything", "aarch64",
                                                    "RELEASED, STABLE", "brno, raleigh"]
    one_line(cli("distro", "add", "CliProv-2", "--arch", "aarch64", "--variant", "Everything", "--url", "http://x/",
                 "--kernel", "k", "--initrd", "i"), ExitStatus.CONFLICT, "distro tree CliProv-2 aarch64 Everything "
                                                                          "already exists")
    plain = json.loads(cli.ok("distro", "add", "CliProv-3", "--arch", "x86_64", "--url", "http://x/", "--kernel", "k",
                              "--initrd", "i", "--json").out)
    assert (plain["family"], plain["variant"], plain["tags"], plain["labs"]) == (None, None, [], [])

    assert cli.ok("distro", "remove", tree_id).out == f"removed distro tree {tree_id} (CliProv-2 aarch64 Everything)\n"
    assert cli.ok("distros", "--name", "CliProv-2").lines[1:] == []
    one_line(cli("distro", "remove", tree_id), ExitStatus.NOT_FOUND, f"no distro tree {tree_id}")
    assert cli.ok("distro", "remove", str(plain["id"]), "--json").out == ""


def test_distro_add_and_remove_are_refused_to_users(cli):
    refused = cli("distro", "add", "CliProv-4", "--arch", "x86_64", "--url", "http://x/", "--kernel", "k",
                  "--initrd", "i", user="bob")
    assert refused.out == ""
    one_line(refused, ExitStatus.FORBIDDEN, "only administrators may register distro trees")
    tree_id = str(json.loads(cli.ok("distro", "add", "CliProv-4", "--arch", "x86_64", "--url", "http://x/",
                                    "--kernel", "k", "--initrd", "i", "--json").out)["id"])
    one_line(cli("distro", "remove", tree_id, user="bob"), ExitStatus.FORBIDDEN,
             "only administrators may remove distro trees")
    assert [d["id"] for d in json.loads(cli.ok("distros", "--name", "CliProv-4", "--json").out)] == [int(tree_id)]
    cli.ok("distro", "remove", tree_id)


@pytest.mark.parametrize("argv", [
    ["provision", "s1.lab.test"],
    ["provision", "s1.lab.test", "F", "--timeout", "soon"],
    ["provision", "s1.lab.test", "F", "--interval", "0"],
    ["power", "s1.lab.test", "dance"],
    ["power", "s1.lab.test"],
    ["installations", "s1.lab.test", "--limit", "0"],
    ["installation", "one"],
    ["commands"],
    ["distro"],
    ["distro", "add", "X", "--arch", "x86_64", "--kernel", "k", "--initrd", "i"],  # no --url
    ["distro", "remove", "X"],
])
def test_provisioning_usage_errors_exit_2(cli, argv):
    result = cli(*argv)
    assert (result.code, result.out) == (ExitStatus.USAGE, "")


# --- following installs and commands to the end: a server with its worker --------------------------

@pytest.fixture(scope="module")
def worker(tmp_path_factory):
    live = LiveServer(tmp_path_factory.mktemp("w"), workers=1, threads=4, settings={
        "install_timeout": "60s", "command_retry_delay": "1s"}).start()
    live.add_user("bob")
    assert live.admin.post("/distro-trees", json=TREE).status_code == 201
    try:
        yield live
    finally:
        live.stop()  # also kills the simulated machines


@pytest.fixture
def on_worker(worker):
    from .conftest import Cli

    return Cli(worker)


def test_provision_wait_reaches_running_and_power_wait_completes(worker, on_worker):
    cli = on_worker
    fqdn = provisionable(worker, "pw1.lab.test")
    cli.ok("reserve", fqdn, "--duration", "1h", user="bob")
    result = cli.ok("provision", fqdn, "ProvOS-1", "--wait", "--timeout", "60", "--interval", "0.1", user="bob")
    head, _, changes = result.out.partition("\n\n")
    installation_id = block(head)["id"][0]
    assert block(head)["status"] == ["queued"]
    lines = [line.split("  ", 1) for line in changes.splitlines()]
    assert lines and all(re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d UTC", when) for when, _ in lines)
    said = [what for _, what in lines]
    assert said[-1].startswith(f"installation {installation_id}  ") and said[-1].endswith(" -> running")
    seen = ["queued"] + [what.rsplit(" -> ", 1)[1] for what in said]
    assert seen == sorted(set(seen), key=["queued", "installing", "installed", "running"].index)
    assert json.loads(cli.ok("installation", installation_id, "--json").out)["status"] == "running"

    command = json.loads(cli.ok("power", fqdn, "reboot", "--wait", "--timeout", "30", "--interval", "0.1",
                                "--json", user="bob").out)
    assert (command["action"], command["status"], command["attempts"]) == ("reboot", "completed", 1)
    table = cli.ok("commands", fqdn, user="bob")
    assert [line.split()[1:3] for line in table.lines[1:]] == [
        ["reboot", "completed"], ["netboot_local", "completed"], ["reboot", "completed"],
        ["netboot_install", "completed"]]


def test_a_failed_install_exits_8_with_its_error(worker, on_worker):
    cli = on_worker
    fqdn = provisionable(worker, "pw2.lab.test", fail=True)
    cli.ok("reserve", fqdn, "--duration", "1h", user="bob")
    result = cli("provision", fqdn, "ProvOS-1", "--wait", "--timeout", "60", "--interval", "0.1", "--json",
                 user="bob")
    failed = json.loads(result.out)  # the machine formats print the failed installation
    assert failed["status"] == "failed" and "install_fail" in failed["error"]
    one_line(result, ExitStatus.ENDED, f"installation {failed['id']} of {fqdn} failed: {failed['error']}")
