"""`make demo`: a real server, a few systems, and a playbook that leases one.

1. start `lablease-server serve` on SQLite in ./.lablease-demo (fresh each time) on a free loopback port;
2. import playbooks/files/demo-systems.yml and create a user with a token;
3. run `ansible-playbook playbooks/demo.yml`: reserve s1.lab.test for 15 minutes, show its end, return it;
4. check over the API that the system was returned; stop the server whatever happens.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
DATA = ROOT / ".lablease-demo"
SYSTEMS = ROOT / "playbooks" / "files" / "demo-systems.yml"
SYSTEM = "s1.lab.test"


def step(text: str) -> None:
    print(f"\n==> {text}", flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def admin(env: dict, *args: str) -> str:
    result = subprocess.run([str(BIN / "lablease-server"), *args], env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"lablease-server {' '.join(args)} failed:\n{result.stderr}")
    return result.stdout.strip()


def api(url: str, token: str, path: str):
    request = urllib.request.Request(url + "/api/v1" + path, headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.load(answer)


def wait_ready(url: str, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited ({process.returncode}); see {DATA / 'server.log'}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"the server did not answer within 30 s; see {DATA / 'server.log'}")


def main() -> int:
    shutil.rmtree(DATA, ignore_errors=True)
    DATA.mkdir()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {**os.environ, "LABLEASE_DATA_DIR": str(DATA), "LABLEASE_LISTEN": f"127.0.0.1:{port}"}
    env.pop("LABLEASE_DATABASE_URL", None)  # the demo always runs on SQLite in its data dir

    step(f"Creating a SQLite database in {DATA.relative_to(ROOT)}")
    print(admin(env, "init"))
    step(f"Importing systems from {SYSTEMS.relative_to(ROOT)}")
    print(admin(env, "system", "import", str(SYSTEMS)))
    step("Creating user 'demo' and an API token")
    token = admin(env, "user", "add", "demo")
    print("token created (shown once, kept in this process only)")

    step(f"Starting lablease-server serve on {url} (the API and its worker)")
    log = open(DATA / "server.log", "ab")
    server = subprocess.Popen([str(BIN / "lablease-server"), "serve", "--workers", "1"], env=env,
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_ready(url, server)
        print("server is up")

        step(f"ansible-playbook playbooks/demo.yml (reserve {SYSTEM} for 15m, show it, return it)")
        playbook_env = {
            **env, "LABLEASE_URL": url, "LABLEASE_TOKEN": token, "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
            "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".collections"),
            "ANSIBLE_FORCE_COLOR": env.get("ANSIBLE_FORCE_COLOR", "0"),
        }
        played = subprocess.run([str(BIN / "ansible-playbook"), "playbooks/demo.yml", "-e", f"demo_system={SYSTEM}"],
                                cwd=ROOT, env=playbook_env, check=False)
        if played.returncode != 0:
            print(f"\nthe playbook failed (exit {played.returncode})", file=sys.stderr)
            return 1

        step(f"Checking over the API that {SYSTEM} was returned")
        system = api(url, token, f"/systems/{SYSTEM}")
        held = api(url, token, f"/reservations?system={SYSTEM}&active=true")
        past = api(url, token, f"/reservations?system={SYSTEM}&active=false")
        if system["reservation"] is not None or held:
            print(f"{SYSTEM} is still reserved: {system['reservation']}", file=sys.stderr)
            return 1
        last = past[0]
        print(f"{SYSTEM}: no current reservation; reservation {last['id']} by {last['user']} "
              f"ran {last['start']} .. {last['end']}, state {last['state']}, returned at {last['returned_at']}")
        step("Demo finished: the system was leased and returned")
        return 0
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)
        log.close()
        print("server stopped")


if __name__ == "__main__":
    sys.exit(main())
