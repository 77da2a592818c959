"""Each power driver against the real thing it talks to, or a faithful stand-in.

ipmitool and virsh are fake executables first on PATH that record their argv
and environment (the real BMCs, Redfish and IPMI, are in test_power_bmcs.py); the command
driver runs real scripts; the virtual driver runs real simulated machines that
netboot from a TFTP directory and call back a real HTTP server.
"""
from __future__ import annotations

import json
import os
import signal
import stat
import sys
import threading
import time
from pathlib import Path

import pytest
from werkzeug.serving import make_server
from werkzeug.wrappers import Request, Response

from lablease.power import PowerError, PowerTarget
from lablease.power.registry import driver_for

FIXTURES = Path(__file__).resolve().parents[1] / "power_fixtures"
PASSWORD = "hunter2-s3cret"
MAC = "52:54:00:12:34:56"


def make_target(tmp_path, timeout=10.0, mac=None, **settings) -> PowerTarget:
    return PowerTarget(fqdn="s1.lab.test", settings=settings, timeout=timeout, data_dir=tmp_path / "data",
                       scripts_dir=tmp_path / "scripts", tftp_root=tmp_path / "tftp", mac=mac)


def power(tmp_path, **settings):
    return driver_for(make_target(tmp_path, **settings))


def eventually(predicate, timeout=30.0, step=0.05):  # generous: CI machines are busy
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"still not true after {timeout} s: {predicate.__doc__ or predicate}")
        time.sleep(step)


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def write_executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


class FakeTools:
    """Fake executables first on PATH; each call is one JSON line in the log."""

    def __init__(self, tmp_path, monkeypatch):
        self.bin = tmp_path / "bin"
        self.log = tmp_path / "calls.jsonl"
        self.state = tmp_path / "power-state"
        monkeypatch.setenv("PATH", f"{self.bin}{os.pathsep}{os.environ['PATH']}")
        monkeypatch.setenv("FAKE_POWER_LOG", str(self.log))
        monkeypatch.setenv("FAKE_POWER_STATE", str(self.state))
        monkeypatch.setenv("FAKE_BMC_PASSWORD", PASSWORD)

    def install(self, name: str, fixture: str) -> None:
        write_executable(self.bin / name, f'#!/bin/sh\nexec "{sys.executable}" "{FIXTURES / fixture}" "$@"\n')

    def calls(self) -> list[dict]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def argvs(self) -> list[list[str]]:
        return [call["argv"] for call in self.calls()]


@pytest.fixture
def tools(tmp_path, monkeypatch):
    return FakeTools(tmp_path, monkeypatch)


class Served:
    """A WSGI app on 127.0.0.1 in a thread, for drivers and machines that speak HTTP."""

    def __init__(self, app):
        self.server = make_server("127.0.0.1", 0, app, threaded=True)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05})
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def serve():
    servers = []

    def start(app):
        servers.append(Served(app))
        return servers[-1]
    yield start
    for served in servers:
        served.close()


# --- ipmitool -------------------------------------------------------------------------------------------

IPMI = {"driver": "ipmitool", "address": "bmc1.lab.test", "user": "admin", "password": PASSWORD}
IPMI_ARGV = ["-I", "lanplus", "-H", "bmc1.lab.test", "-U", "admin", "-E", "chassis", "power"]


def test_ipmitool_passes_the_password_only_in_its_environment(tmp_path, tools):
    tools.install("ipmitool", "fake_ipmitool.py")
    driver = power(tmp_path, **IPMI)
    driver.act("on")
    assert driver.status() == "on"
    driver.act("off")
    assert driver.status() == "off"
    assert tools.argvs() == [IPMI_ARGV + ["on"], IPMI_ARGV + ["status"], IPMI_ARGV + ["off"], IPMI_ARGV + ["status"]]
    for call in tools.calls():
        assert call["IPMI_PASSWORD"] == PASSWORD
        assert not any(PASSWORD in arg for arg in call["cmdline"])


def test_ipmitool_interface_and_port_settings(tmp_path, tools):
    tools.install("ipmitool", "fake_ipmitool.py")
    power(tmp_path, **IPMI, interface="lan", port=6230).act("off")
    assert tools.argvs() == [["-I", "lan", "-H", "bmc1.lab.test", "-U", "admin", "-E", "-p", "6230",
                              "chassis", "power", "off"]]


# --- libvirt --------------------------------------------------------------------------------------------

def virsh(command):
    return ["-c", "qemu:///system", command, "vm1"]


@pytest.mark.parametrize("state, action, commands", [
    ("shut off", "on", ["domstate", "start"]),
    ("running", "on", ["domstate"]),
    ("running", "off", ["domstate", "destroy"]),
    ("shut off", "off", ["domstate"]),
    ("running", "reboot", ["domstate", "reset"]),
    ("shut off", "reboot", ["domstate", "start"]),
    ("running", "interrupt", ["inject-nmi"]),
])
def test_virsh_commands(tmp_path, tools, state, action, commands):
    tools.install("virsh", "fake_virsh.py")
    tools.state.write_text(state)
    power(tmp_path, driver="libvirt", address="vm1").act(action)
    assert tools.argvs() == [virsh(command) for command in commands]


def test_virsh_interrupt_of_a_domain_that_is_off_says_what_virsh_said(tmp_path, tools):
    tools.install("virsh", "fake_virsh.py")
    tools.state.write_text("shut off")
    with pytest.raises(PowerError, match="domain is not running"):
        power(tmp_path, driver="libvirt", address="vm1").act("interrupt")
    assert tools.argvs() == [virsh("inject-nmi")]


def test_virsh_status_and_uri(tmp_path, tools):
    tools.install("virsh", "fake_virsh.py")
    driver = power(tmp_path, driver="libvirt", address="vm1", uri="qemu+ssh://hv1/system")
    assert driver.status() == "off"
    driver.act("on")
    assert driver.status() == "on"
    assert tools.argvs()[2] == ["-c", "qemu+ssh://hv1/system", "start", "vm1"]


def test_virsh_failure_quotes_its_error(tmp_path, tools):
    tools.install("virsh", "fake_virsh.py")
    with pytest.raises(PowerError, match=r"virsh exited with status 1: .*domain is not running"):
        power(tmp_path, driver="libvirt", address="vm1")._virsh("destroy")


# --- command --------------------------------------------------------------------------------------------

COMMAND = {"driver": "command", "address": "pdu1.lab.test", "id": "7", "user": "apc", "password": PASSWORD}


def test_command_runs_the_named_script_with_the_beaker_environment(tmp_path):
    record = tmp_path / "seen"
    write_executable(tmp_path / "scripts" / "pdu", f'#!/bin/sh\nenv | grep -E "^(power_|LABLEASE_FQDN)" '
                                                   f'| sort > {record}.$power_mode\n')
    driver = power(tmp_path, script="pdu", **COMMAND)
    driver.act("reboot")
    assert (tmp_path / "seen.reboot").read_text().splitlines() == [
        "LABLEASE_FQDN=s1.lab.test", "power_address=pdu1.lab.test", "power_id=7", "power_mode=reboot",
        f"power_pass={PASSWORD}", "power_user=apc"]
    driver.act("on")
    assert "power_mode=on" in (tmp_path / "seen.on").read_text()
    assert driver.status() == "unknown"


def test_command_failure_is_a_power_error_with_the_password_scrubbed(tmp_path):
    write_executable(tmp_path / "scripts" / "pdu",
                     '#!/bin/sh\necho "login $power_user/$power_pass refused by $power_address" >&2\nexit 4\n')
    with pytest.raises(PowerError) as error:
        power(tmp_path, script="pdu", **COMMAND).act("off")
    assert str(error.value).endswith("pdu exited with status 4: login apc/*** refused by pdu1.lab.test")
    assert PASSWORD not in str(error.value)


@pytest.mark.timeout(30)
def test_command_that_hangs_is_killed(tmp_path):
    write_executable(tmp_path / "scripts" / "stuck", "#!/bin/sh\nsleep 60\n")
    started = time.monotonic()
    with pytest.raises(PowerError, match=r"stuck timed out after 1 s$"):
        driver_for(make_target(tmp_path, timeout=1, **{**COMMAND, "script": "stuck"})).act("on")
    assert time.monotonic() - started < 5


def test_command_script_must_exist_be_executable_and_be_a_plain_name(tmp_path):
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "notexec").write_text("#!/bin/sh\n")
    with pytest.raises(PowerError, match="power script missing for s1.lab.test is missing or not executable"):
        power(tmp_path, script="missing", **COMMAND).act("on")
    with pytest.raises(PowerError, match="power script notexec for s1.lab.test is missing or not executable"):
        power(tmp_path, script="notexec", **COMMAND).act("on")
    with pytest.raises(PowerError, match="power script '../bin/true' for s1.lab.test is not a plain name"):
        power(tmp_path, script="../bin/true", **COMMAND).act("on")


# --- virtual --------------------------------------------------------------------------------------------

class InstallServer:
    """Serves one installation's kickstart, whose callbacks point back here, and records the callbacks."""

    TOKEN = "tok-7"

    def __init__(self):
        self.events: list[str] = []
        self.url = ""

    def __call__(self, environ, start_response):
        request = Request(environ)
        base = "/api/v1/installations/7"
        if request.method == "GET" and request.path == f"{base}/kickstart":
            response = Response(self.kickstart(), mimetype="text/plain")
        elif request.method == "POST" and request.path.startswith(f"{base}/"):
            if request.args.get("token") != self.TOKEN:
                response = Response("bad token", status=403)
            else:
                self.events.append(request.path.rsplit("/", 1)[1])
                response = Response(status=204)
        else:
            response = Response("not found", status=404)
        return response(environ, start_response)

    def kickstart(self) -> str:
        def callback(event):
            return f"'{self.url}/api/v1/installations/7/{event}?token={self.TOKEN}'"
        return (f"url --url=http://mirror.lab.test/os\n%pre\ncurl -X POST {callback('install_start')}\n%end\n"
                f"%post\ncurl -X POST {callback('install_done')}\n"
                f"echo {callback('postinstall_done')} > /etc/lablease-firstboot\n%end\n"
                f"%onerror\ncurl -X POST {callback('install_fail')}\n%end\n")

    def ipxe(self) -> str:
        return (f"#!ipxe\n# lablease: install\nkernel http://mirror.lab.test/vmlinuz initrd=initrd "
                f"inst.ks={self.url}/api/v1/installations/7/kickstart console=ttyS0\n"
                f"initrd --name initrd http://mirror.lab.test/initrd.img\nboot\n")


LOCAL_BOOT = "#!ipxe\n# lablease: boot from the local disk\nsanboot --no-describe --drive 0x80 || exit\n"
VIRTUAL = {"driver": "virtual", "boot_delay": 0, "install_delay": 0.2}


@pytest.fixture
def machines(tmp_path):
    """Kills any simulated machine a test left running."""
    yield tmp_path
    for pid_file in (tmp_path / "data" / "virtual").glob("*/pid"):
        try:
            os.killpg(int(pid_file.read_text()), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass


@pytest.fixture
def install_server(serve):
    server = InstallServer()
    server.url = serve(server).url
    return server


def netboot(tmp_path, script: str) -> None:
    path = tmp_path / "tftp" / "ipxe" / "52-54-00-12-34-56"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(script)


def machine(tmp_path, **settings):
    return driver_for(make_target(tmp_path, mac=MAC, **{**VIRTUAL, **settings}))


def pid_of(tmp_path) -> int:
    return int((tmp_path / "data" / "virtual" / "s1.lab.test" / "pid").read_text())


def console(tmp_path) -> str:
    return (tmp_path / "data" / "virtual" / "s1.lab.test" / "console.log").read_text()


@pytest.mark.timeout(60)
def test_virtual_machine_installs_through_the_real_callbacks(machines, install_server):
    tmp_path = machines
    netboot(tmp_path, install_server.ipxe())
    driver = machine(tmp_path)
    driver.act("on")
    assert driver.status() == "on"
    pid = pid_of(tmp_path)

    eventually(lambda: "install_done" in install_server.events)
    assert install_server.events == ["install_start", "install_done"]
    # It has looked at its netboot config, found it unchanged, and waits for the server to rewrite it.
    eventually(lambda: console(tmp_path).rstrip().endswith("waiting up to 30 s for the server to rewrite it"))
    assert install_server.events == ["install_start", "install_done"]
    assert console(tmp_path).count("firmware starting") == 1  # no second boot

    netboot(tmp_path, LOCAL_BOOT)
    eventually(lambda: "postinstall_done" in install_server.events)
    assert install_server.events == ["install_start", "install_done", "postinstall_done"]
    log = console(tmp_path)
    assert "netboot says local boot: booting the local disk" in log and "first boot of the installed system" in log
    assert InstallServer.TOKEN not in log

    driver.act("off")
    assert driver.status() == "off" and not alive(pid)
    assert not (tmp_path / "data" / "virtual" / "s1.lab.test" / "pid").exists()
    assert console(tmp_path).rstrip().endswith("s1.lab.test: power off")


@pytest.mark.timeout(60)
def test_virtual_machine_without_netboot_config_boots_its_disk_and_reboots_as_a_new_process(machines):
    tmp_path = machines
    driver = machine(tmp_path)
    driver.act("on")
    first = pid_of(tmp_path)
    driver.act("on")  # already on: the same machine
    assert pid_of(tmp_path) == first
    eventually(lambda: "running" in console(tmp_path))
    assert "no netboot config: booting the local disk" in console(tmp_path)

    driver.act("reboot")
    second = pid_of(tmp_path)
    assert second != first and driver.status() == "on"
    eventually(lambda: not alive(first))  # its reaper may lag on a busy machine
    driver.act("off")
    eventually(lambda: not alive(second))


@pytest.mark.timeout(60)
def test_virtual_machine_failing_its_install_calls_install_fail_and_halts(machines, install_server):
    tmp_path = machines
    netboot(tmp_path, install_server.ipxe())
    driver = machine(tmp_path, fail_install=True)
    driver.act("on")
    eventually(lambda: "install_fail" in install_server.events)
    eventually(lambda: "installer halted" in console(tmp_path))
    assert install_server.events == ["install_start", "install_fail"]
    assert driver.status() == "on"
    driver.act("off")


@pytest.mark.timeout(60)
def test_virtual_machine_with_a_broken_kickstart_url_fails_its_boot(machines, install_server):
    tmp_path = machines
    netboot(tmp_path, install_server.ipxe().replace("/installations/7/", "/installations/8/"))
    driver = machine(tmp_path)
    driver.act("on")
    eventually(lambda: "no kickstart: boot failed" in console(tmp_path))
    assert "answered 404" in console(tmp_path) and install_server.events == []
    driver.act("off")


@pytest.mark.timeout(60)
def test_virtual_machine_powers_itself_off_when_its_lab_is_deleted(machines):
    tmp_path = machines
    (tmp_path / "tftp").mkdir()
    driver = machine(tmp_path)
    driver.act("on")
    pid = pid_of(tmp_path)
    eventually(lambda: "running" in console(tmp_path))
    (tmp_path / "tftp").rmdir()
    eventually(lambda: not alive(pid), timeout=5)
    assert "TFTP root is gone" in console(tmp_path)
    assert driver.status() == "off"
