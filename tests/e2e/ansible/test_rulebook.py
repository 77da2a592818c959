"""The real ansible-rulebook with the lablease.lab.events source and the example rulebook, against a real server.

One server (with its worker) and one ansible-rulebook process for the module: an event in lablease (a CI
reservation about to end, told by the worker) fires the rulebook's rule, whose playbook extends the reservation
with the collection's modules; the effect is read back through the API. ansible-rulebook runs from its own venv
(scripts/requirements/ansible-rulebook.txt, `make playbooks` builds it) and needs Java 17 (scripts/ensure-java.sh).
"""
from __future__ import annotations

import os
import subprocess
import time
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from tests.e2e.ansible.test_playbooks import ROOT, ansible_env, warm_up
from tests.support.live import LiveServer

RULEBOOK_VENV = Path(os.environ.get("ANSIBLE_RULEBOOK_VENV", ROOT / ".venv" / "tools" / "ansible-rulebook"))
SYSTEM = "s1.lab.test"


def when(text):
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    live = LiveServer(tmp_path_factory.mktemp("rulebook") / "data", workers=1, threads=4).start()
    try:
        live.ci, = live.add_users("ci", then=(("system", "add", SYSTEM, "--arch", "x86_64"),))
        warm_up(live)
        yield live
    finally:
        live.stop()


@pytest.fixture(scope="module")
def rulebook(server, tmp_path_factory):
    """ansible-rulebook running extensions/eda/rulebooks/lablease.yml as the CI user, from the feed's present
    cursor (written to the cursor file the source reads, so no event is missed while it starts)."""
    program = RULEBOOK_VENV / "bin" / "ansible-rulebook"
    if not program.exists():
        pytest.fail(f"no ansible-rulebook in {RULEBOOK_VENV}: `make playbooks` installs it")
    work = tmp_path_factory.mktemp("eda")
    start = server.ci.get("/events", params={"after": "now"}).json()["cursor"]
    (work / "lablease.cursor").write_text(start + "\n")
    (work / "inventory").write_text("localhost ansible_connection=local\n")
    env = ansible_env(server, "ci", PATH=f"{RULEBOOK_VENV / 'bin'}{os.pathsep}{os.environ['PATH']}")
    log = open(work / "rulebook.log", "wb")
    process = subprocess.Popen([str(program), "--rulebook", str(ROOT / "extensions/eda/rulebooks/lablease.yml"),
                                "--inventory", "inventory", "--verbose"], cwd=work, env=env, stdout=log,
                               stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield work, process
    finally:
        process.terminate()
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)
        log.close()


def test_a_ci_reservation_about_to_end_is_extended_by_the_rulebook(server, rulebook):
    work, process = rulebook
    # Warned 2 s after it starts: 1 h (the site's short warning lead) before its end, as reservation.ending.
    made = server.ci.post("/reservations", json={"system": SYSTEM, "duration": "PT1H2S", "heartbeat": "30m"})
    assert made.status_code == 201, made.text
    reservation = made.json()
    end = when(reservation["end"])
    deadline = time.monotonic() + 180
    now = reservation
    while when(now["end"]) == end:
        assert process.poll() is None, (work / "rulebook.log").read_text(errors="replace")[-4000:]
        assert time.monotonic() < deadline, ("the rulebook did not extend the reservation:\n"
                                             + (work / "rulebook.log").read_text(errors="replace")[-4000:])
        time.sleep(0.5)
        now = server.ci.get(f"/reservations/{reservation['id']}").json()
    assert when(now["end"]) == end + timedelta(hours=2)  # the playbook's eda_extend_hours
    [event] = server.ci.get("/events").json()["events"]  # the CI user's only event
    assert event["event"] == "reservation.ending" and event["reservation"] == reservation["id"]
    assert (work / "lablease.cursor").read_text().strip() == event["cursor"]  # where a restart reads on from
