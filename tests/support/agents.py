"""A real `lablease-agent run` process for one lab (docs/lab-agents.md), beside a LiveServer."""
from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

from .live import BIN, LiveServer


class Agent:
    """One lab's agent process, in a directory of its own (its TFTP root, scripts, token, markers)."""

    def __init__(self, server: LiveServer, home: Path, lab: str, listen: str = ""):
        self.home, self.lab, self.process = home, lab, None
        (home / "scripts").mkdir(parents=True)
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("LABLEASE_")}
        self.env.update(LABLEASE_DATA_DIR=str(home), LABLEASE_AGENT_SERVER_URL=server.url, LABLEASE_AGENT_LAB=lab,
                        LABLEASE_TFTP_ROOT=str(home / "tftp"), LABLEASE_POWER_SCRIPTS_DIR=str(home / "scripts"),
                        LABLEASE_AGENT_LISTEN=listen)
        token = server.admin_cli("lab", "token", lab)
        subprocess.run([str(BIN / "lablease-agent"), "save-token"], input=token, env=self.env, check=True, text=True,
                       capture_output=True)
        self.token = token.strip()

    def add_script(self, name: str, text: str) -> None:
        """A power script of the `command` driver, in this agent's own scripts directory."""
        script = self.home / "scripts" / name
        script.write_text(text)
        script.chmod(0o755)

    def start(self) -> Agent:
        with open(self.home / "agent.log", "ab") as log:
            self.process = subprocess.Popen([str(BIN / "lablease-agent"), "run"], env=self.env, stdout=log,
                                            stderr=subprocess.STDOUT, start_new_session=True)
        return self

    def kill9(self) -> None:
        """SIGKILL the agent and what it runs, as a crash of its host or its unit's stop (systemd's control group)
        would: a power script runs in a session of its own, so its pid is killed too."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(10)
        hung = self.home / "hung"
        if hung.exists():
            try:
                os.kill(int(hung.read_text()), signal.SIGKILL)
            except (ValueError, ProcessLookupError):
                pass
            hung.unlink()

    def lines(self, name: str) -> list[str]:
        path = self.home / name
        return path.read_text().splitlines() if path.exists() else []
