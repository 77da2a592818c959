"""process.run: secrets only in the environment, scrubbed from errors; a timeout kills the whole group."""
import json
import sys
import time
from pathlib import Path

import pytest

from lablease.power import PowerError
from lablease.power.process import run

FIXTURES = Path(__file__).resolve().parents[1] / "power_fixtures"


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_returns_stdout_and_passes_the_environment():
    out = run(["sh", "-c", 'echo "mode=$power_mode"'], {"power_mode": "on"}, 5, [])
    assert out == "mode=on\n"


def test_a_secret_reaches_the_environment_never_the_command_line(tmp_path):
    record = tmp_path / "record.json"
    run([sys.executable, FIXTURES / "record_self.py", record], {"IPMI_PASSWORD": "hunter2"}, 10, ["hunter2"])
    seen = json.loads(record.read_text())
    assert "IPMI_PASSWORD=hunter2" in seen["environ"].split("\0")
    assert "hunter2" not in seen["cmdline"]


def test_a_secret_on_the_command_line_is_refused():
    with pytest.raises(PowerError, match="a secret would be on its command line"):
        run(["ipmitool", "-P", "hunter2"], {}, 5, ["hunter2"])


def test_a_failure_quotes_the_last_lines_of_stderr_with_secrets_scrubbed():
    script = 'for i in 1 2 3 4 5 6 7; do echo "line $i" >&2; done; echo "login $PW refused" >&2; exit 3'
    with pytest.raises(PowerError) as error:
        run(["sh", "-c", script], {"PW": "hunter2"}, 5, ["hunter2"])
    assert str(error.value) == "sh exited with status 3: line 4 | line 5 | line 6 | line 7 | login *** refused"


def test_a_failure_without_stderr_quotes_stdout():
    with pytest.raises(PowerError, match=r"^false exited with status 1: no output$"):
        run(["false"], {}, 5, [])
    with pytest.raises(PowerError, match=r"exited with status 2: Chassis Power is \?$"):
        run(["sh", "-c", "echo 'Chassis Power is ?'; exit 2"], {}, 5, [])


def test_a_missing_program_is_a_power_error():
    with pytest.raises(PowerError, match="cannot run no-such-ipmitool: No such file or directory"):
        run(["no-such-ipmitool"], {}, 5, [])


@pytest.mark.timeout(30)
def test_a_timeout_kills_the_program_and_what_it_started(tmp_path):
    pids = tmp_path / "pids"
    # The child starts a grandchild and waits for it; both must die with the group.
    script = f'sleep 60 & echo $! > {pids}.tmp; echo $$ >> {pids}.tmp; mv {pids}.tmp {pids}; wait'
    started = time.monotonic()
    with pytest.raises(PowerError, match=r"^sh timed out after 1.5 s$"):
        run(["sh", "-c", script], {}, 1.5, [])
    assert time.monotonic() - started < 5
    grandchild, child = (int(line) for line in pids.read_text().split())
    deadline = time.monotonic() + 5
    while (alive(child) or alive(grandchild)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child) and not alive(grandchild)
