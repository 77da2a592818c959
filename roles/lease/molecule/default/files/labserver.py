"""Start or stop a real lablease server for the molecule scenario.

    labserver.py start STATE.json   # init, users, systems, serve; writes url, tokens and pid
    labserver.py stop STATE.json    # stops the server's process group
Uses tests/support/live.py of the checkout (the same helper as the e2e tests).
"""
import json
import os
import signal
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[5]


def start(state: Path) -> None:
    sys.path.insert(0, str(ROOT))
    from tests.support.live import LiveServer

    server = LiveServer(state.parent / "lablease-data", workers=1, threads=4).start()
    server.add_user("bob")
    for fqdn in ("ok.lab.test", "fail.lab.test", "kept.lab.test"):
        server.admin_cli("system", "add", fqdn, "--arch", "x86_64")
    state.write_text(json.dumps({"url": server.url, "pids": [server.process.pid],
                                 "tokens": server.tokens}))
    print(f"lablease server on {server.url}")


def stop(state: Path) -> None:
    if not state.exists():
        return
    for pid in json.loads(state.read_text())["pids"]:
        try:
            os.killpg(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
    state.unlink()


if __name__ == "__main__":
    action, path = sys.argv[1], Path(sys.argv[2])
    {"start": start, "stop": stop}[action](path)
