"""Lab agents end to end: a real server and one `lablease-agent` process per lab (docs/lab-agents.md).

Each lab has its own TFTP root and power scripts directory; the `command` power driver's script
writes a line per action into its lab's own marker file, so where a command ran is what a user
would check: which lab's file has it.
"""
from __future__ import annotations

import re
import subprocess
import time

import pytest
import requests
from prometheus_client.parser import text_string_to_metric_families

from tests.support.agents import Agent
from tests.support.live import BIN, LiveServer
from tests.support.postgres import free_port

SCRIPT = """#!/bin/sh
echo "$LABLEASE_FQDN $power_mode" >> "$(dirname "$0")/../started"
if [ -e "$(dirname "$0")/hang" ]; then rm -f "$(dirname "$0")/hang"; echo $$ > "$(dirname "$0")/../hung"; exec sleep 120; fi
echo "$LABLEASE_FQDN $power_mode" >> "$(dirname "$0")/../marker"
"""
TREE = {"name": "Fedora-40", "arch": "x86_64", "url": "http://mirror.lab.test/f40/os/",
        "kernel": "images/pxeboot/vmlinuz", "initrd": "images/pxeboot/initrd.img"}
METRICS_TOKEN = "agents-scrape-token"
MACS = {"e1.east.test": "52:54:00:ee:00:01", "w1.west.test": "52:54:00:77:00:01"}


def until(check, what: str, timeout: float = 60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if (found := check()):
            return found
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    root = tmp_path_factory.mktemp("agents")
    proxy = f"127.0.0.1:{free_port()}"  # east's installers reach the server through east's agent only
    metrics = f"127.0.0.1:{free_port()}"
    server = LiveServer(root / "server", settings={
        "command_timeout": "3s", "command_retry_delay": "1s", "agent_silence_limit": "4s",
        "metrics_token": METRICS_TOKEN, "metrics_listen": metrics,
        "labs": f'{{"east": {{"install_url": "http://{proxy}"}}}}'}).start()
    server.proxy, server.metrics_url = proxy, f"http://{metrics}/metrics"
    agents = {}
    try:
        server.admin_cli_many(("lab", "add", "east"), ("lab", "add", "west"))
        for lab, fqdn in (("east", "e1.east.test"), ("west", "w1.west.test")):
            status = server.admin.post("/systems", json={
                "fqdn": fqdn, "arch": "x86_64", "lab": lab, "condition": "manual",
                "power": {"driver": "command", "script": "mark", "password": f"{lab}-bmc-secret"},
                "netboot": {"mac": MACS[fqdn]}}).status_code
            assert status == 201
            agents[lab] = Agent(server, root / lab, lab, proxy if lab == "east" else "").start()
            agents[lab].add_script("mark", SCRIPT)
        yield server, agents
    finally:
        for agent in agents.values():
            if agent.process and agent.process.poll() is None:
                agent.kill9()
        server.stop()


def finished(server, command_id: int):
    command = server.admin.get(f"/commands/{command_id}").json()
    return command if command["status"] in ("completed", "failed") else None


def power(server, fqdn: str, action: str = "on") -> int:
    answer = server.admin.post(f"/systems/{fqdn}/power", json={"action": action})
    assert answer.status_code == 202, answer.text
    return answer.json()["id"]


def test_each_labs_commands_run_on_its_own_agent(site):
    server, agents = site
    east, west = power(server, "e1.east.test"), power(server, "w1.west.test", "off")
    assert until(lambda: finished(server, east), "east's command")["status"] == "completed"
    assert until(lambda: finished(server, west), "west's command")["status"] == "completed"
    assert agents["east"].lines("marker") == ["e1.east.test on"]
    assert agents["west"].lines("marker") == ["w1.west.test off"]
    # Netboot files land in the lab's own TFTP root, written by its agent.
    assert server.admin.post("/distro-trees", json=TREE).status_code == 201
    assert server.admin.post("/reservations", json={"system": "e1.east.test", "duration": "1h"}).status_code == 201
    provision = server.admin.post("/systems/e1.east.test/provision", json={"distro_tree": "Fedora-40"})
    assert provision.status_code == 202, provision.text
    ipxe = agents["east"].home / "tftp" / "ipxe" / "52-54-00-ee-00-01"
    kickstart_url = provision.json()["kickstart_url"]
    assert kickstart_url.startswith(f"http://{server.proxy}/")
    assert f"inst.ks={kickstart_url}" in until(lambda: ipxe.exists() and ipxe.read_text(), "east's netboot file")
    assert not (agents["west"].home / "tftp" / "ipxe").exists()
    labs = {lab["name"]: lab for lab in server.admin.get("/labs").json()}
    assert labs["east"]["agent"]["state"] == labs["west"]["agent"]["state"] == "online"
    assert labs["east"]["agent"]["version"]


def test_the_agent_passes_on_its_installers_kickstart_and_callbacks_and_nothing_else(site):
    server, agents = site
    installation = server.admin.get("/systems/e1.east.test/installations").json()[0]
    ipxe = (agents["east"].home / "tftp" / "ipxe" / "52-54-00-ee-00-01").read_text()
    kickstart_url = re.search(r"inst\.ks=(\S+)", ipxe).group(1)  # what the installer is told to fetch
    answer = requests.get(kickstart_url, timeout=30)
    assert answer.status_code == 200 and "%packages" in answer.text, answer.text
    token = kickstart_url.partition("?")[2]
    # A lab agent's proxy is served only its own lab's installations, whatever installation token it passes on.
    direct = f"{server.url}/api/v1/installations/{installation['id']}/kickstart?{token}"
    for agent, status in (("west", 404), ("east", 200)):
        answer = requests.get(direct, headers={"X-Lablease-Agent": agents[agent].token}, timeout=30)
        assert answer.status_code == status, (agent, answer.text)
    assert requests.get(direct, headers={"X-Lablease-Agent": "lla_forged"}, timeout=30).status_code == 401
    started = requests.post(f"http://{server.proxy}/api/v1/installations/{installation['id']}/install_start?{token}",
                            timeout=30)
    assert started.status_code == 204, started.text
    assert server.admin.get(f"/installations/{installation['id']}").json()["status"] == "installing"
    forged = requests.post(f"http://{server.proxy}/api/v1/installations/{installation['id']}/install_done?token=x",
                           timeout=30)
    assert forged.status_code == 403
    for path in ("/api/v1/systems", "/api/v1/agent/take", "/api/v1/openapi.json", "/"):
        answer = requests.get(f"http://{server.proxy}{path}", timeout=30)
        assert answer.status_code == 404 and "only installers" in answer.json()["detail"], path
    assert requests.post(f"http://{server.proxy}/api/v1/agent/take", json={}, timeout=30).status_code == 404
    assert token.removeprefix("token=") not in (agents["east"].home / "agent.log").read_text()  # never logged


def test_forged_and_other_labs_tokens_are_refused(site):
    server, agents = site
    take = server.url + "/api/v1/agent/take"
    for header in ("Bearer lla_forged", f"Bearer {server.tokens['admin']}", None):
        answer = requests.post(take, json={"limit": 1}, headers={"Authorization": header} if header else {},
                               timeout=10)
        assert answer.status_code == 401, answer.text
    east_command = power(server, "e1.east.test", "off")
    # West's agent token cannot report (nor even see) east's command.
    answer = requests.post(f"{server.url}/api/v1/agent/commands/{east_command}/report",
                           json={"attempt": 1, "outcome": "failed", "error": "forged"},
                           headers={"Authorization": f"Bearer {agents['west'].token}"}, timeout=10)
    assert answer.status_code == 404, answer.text
    assert until(lambda: finished(server, east_command), "east's command")["status"] == "completed"
    # A revoked token is refused at once.
    spare = server.admin_cli("lab", "token", "west").strip()
    server.admin_cli("lab", "revoke", "west")
    answer = requests.post(take, json={"limit": 1}, headers={"Authorization": f"Bearer {spare}"}, timeout=10)
    assert answer.status_code == 401 and "revoked" in answer.json()["detail"]
    agents["west"].process.wait(60)  # its own token was revoked too: the agent stops, saying why
    assert "revoked" in (agents["west"].home / "agent.log").read_text()
    agents["west"].token = server.admin_cli("lab", "token", "west").strip()
    subprocess.run([str(BIN / "lablease-agent"), "save-token"], input=agents["west"].token, env=agents["west"].env,
                   check=True, text=True)
    agents["west"].start()


def test_an_agent_killed_mid_command_gets_it_again_after_restart_and_completes_it_once(site):
    server, agents = site
    east = agents["east"]
    (east.home / "scripts" / "hang").touch()
    before, reboots = len(east.lines("started")), east.lines("marker").count("e1.east.test reboot")
    command = power(server, "e1.east.test", "reboot")
    until(lambda: len(east.lines("started")) > before and (east.home / "hung").exists(), "the power script to hang")
    east.kill9()
    east.start()
    done = until(lambda: finished(server, command), "the command after the agent's restart", timeout=90)
    assert done["status"] == "completed" and done["attempts"] == 2, done
    assert east.lines("marker").count("e1.east.test reboot") == reboots + 1


def test_a_silent_agent_degrades_its_lab_while_the_other_goes_on(site):
    server, agents = site
    until(lambda: {lab["name"]: lab for lab in server.admin.get("/labs").json()}["west"]["agent"]["state"] == "online",
          "west's agent to have asked for work")  # so that its silence below is a change, also when run alone
    agents["west"].kill9()
    waiting = power(server, "w1.west.test", "on")
    east = power(server, "e1.east.test", "on")
    assert until(lambda: finished(server, east), "east's command")["status"] == "completed"
    ready = until(lambda: (r := requests.get(server.url + "/api/v1/ready", timeout=10).json())["status"] == "degraded"
                  and r, "readiness to say degraded")
    assert "west" in ready["checks"]["labs"] and "east" not in ready["checks"]["labs"]
    labs = {lab["name"]: lab for lab in server.admin.get("/labs").json()}
    assert labs["west"]["agent"]["state"] == "silent" and labs["east"]["agent"]["state"] == "online"
    assert labs["west"]["commands"]["waiting"] == 1
    # ... as `lablease labs` and /metrics say it too
    shown = subprocess.run([str(BIN / "lablease"), "labs"], capture_output=True, text=True, timeout=60,
                           env={"LABLEASE_URL": server.url, "LABLEASE_TOKEN": server.tokens["admin"]})
    assert shown.returncode == 0, shown.stderr
    rows = {line.split()[0]: line for line in shown.stdout.splitlines()[1:] if line.strip()}
    assert "silent" in rows["west"] and "online" in rows["east"], shown.stdout
    scraped = {(s.name, frozenset(s.labels.items())): s.value for family in text_string_to_metric_families(
        requests.get(server.metrics_url, headers={"Authorization": f"Bearer {METRICS_TOKEN}"}, timeout=10).text)
        for s in family.samples}
    assert scraped[("lablease_lab_commands", frozenset({("lab", "west"), ("state", "queued")}))] == 1
    assert scraped[("lablease_lab_agent_last_seen_age_seconds", frozenset({("lab", "west")}))] > 4
    held = server.admin.get(f"/commands/{waiting}").json()
    assert held["status"] == "queued" and "waits for lab west's agent" in held["waiting_on"]
    listed = {c["id"]: c for c in server.admin.get("/systems/w1.west.test/commands").json()}
    assert listed[waiting]["waiting_on"] == held["waiting_on"]
    assert server.admin.get(f"/commands/{east}").json()["waiting_on"] is None  # finished, and its agent is there
    agents["west"].start()
    done = until(lambda: finished(server, waiting), "west's command once its agent is back")
    assert done["status"] == "completed" and done["waiting_on"] is None
    assert agents["west"].lines("marker")[-1] == "w1.west.test on"
