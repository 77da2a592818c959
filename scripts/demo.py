"""`make demo`: a real server, simulated machines, and a playbook that leases, installs and returns one.

1. start `lablease-server serve` on SQLite in ./.lablease-demo (fresh each time) on a free loopback port;
2. import playbooks/files/demo-systems.yml (vm1 and vm2 are simulated machines), register a distro tree,
   and create a user with a token;
3. run `ansible-playbook playbooks/demo.yml`: the lease role reserves vm1.lab.test for 30 minutes,
   installs Fedora-40 on it (netboot config, power cycle, kickstart, installer callbacks), waits until
   the installed system has booted, runs a task, and returns it;
4. show what happened (the machine's console, its usage history, the power and netboot commands) and
   check over the API that the system was returned and powered off; stop the server whatever happens.
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
SYSTEM = "vm1.lab.test"
DISTRO = {"name": "Fedora-40", "family": "Fedora40", "arch": "x86_64", "variant": "Server",
          "url": "http://mirror.lab.test/fedora/40/Server/x86_64/os/", "kernel": "images/pxeboot/vmlinuz",
          "initrd": "images/pxeboot/initrd.img", "kernel_options": "console=ttyS0,115200"}


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


def api(url: str, token: str, path: str, body: dict | None = None):
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url + "/api/v1" + path, data=data, headers=headers)
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.load(answer)


def show_what_happened(url: str, token: str) -> bool:
    """The machine's console, its usage history and its commands; True when it was returned and powered off."""
    deadline = time.monotonic() + 20
    while api(url, token, f"/systems/{SYSTEM}")["power_state"] != "off" and time.monotonic() < deadline:
        time.sleep(0.5)  # the release action (power off) runs through the worker's command queue
    console = DATA / "virtual" / SYSTEM / "console.log"
    if console.exists():
        step(f"The simulated machine's console ({console.relative_to(ROOT)})")
        print(console.read_text().rstrip())
    step(f"{SYSTEM}: usage history")
    for change in api(url, token, f"/systems/{SYSTEM}/usage")["changes"]:
        print(f"  {change['at']}  {change['field']}: {change['old']} -> {change['new']}")
    step(f"{SYSTEM}: power and netboot commands, oldest first")
    for command in reversed(api(url, token, f"/systems/{SYSTEM}/commands")):
        print(f"  {command['created_at']}  {command['action']:<16} {command['status']} "
              f"(attempts {command['attempts']})")
    system = api(url, token, f"/systems/{SYSTEM}")
    held = api(url, token, f"/reservations?system={SYSTEM}&active=true")
    if system["reservation"] is not None or held or system["power_state"] != "off":
        print(f"{SYSTEM} is still reserved or powered: {system['reservation']}, {system['power_state']}",
              file=sys.stderr)
        return False
    last = api(url, token, f"/reservations?system={SYSTEM}&active=false")[0]
    step(f"{SYSTEM} was returned and powered off")
    print(f"reservation {last['id']} by {last['user']} ran {last['start']} .. {last['end']}, state {last['state']}, "
          f"returned at {last['returned_at']}")
    return True


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


def stop_machines() -> None:
    """Simulated machines run in their own sessions, like real ones; returning the system powered it off,
    but if the demo failed half-way, do not leave any behind."""
    for pid_file in DATA.glob("virtual/*/pid"):
        try:
            os.killpg(int(pid_file.read_text().split()[0]), signal.SIGTERM)
        except (ValueError, IndexError, ProcessLookupError, PermissionError):
            pass


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
    step("Creating user 'demo' and an administrator, each with an API token")
    token = admin(env, "user", "add", "demo")
    admin_token = admin(env, "user", "add", "labadmin", "--admin")
    print("tokens created (shown once, kept in this process only)")

    step(f"Starting lablease-server serve on {url} (the API and its worker)")
    log = open(DATA / "server.log", "ab")
    server = subprocess.Popen([str(BIN / "lablease-server"), "serve", "--workers", "1"], env=env,
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_ready(url, server)
        print("server is up")
        step(f"Registering distro tree {DISTRO['name']} {DISTRO['arch']} (as labadmin)")
        tree = api(url, admin_token, "/distro-trees", DISTRO)
        print(f"distro tree {tree['id']}: {tree['name']} {tree['variant']} {tree['arch']} at {tree['url']}")

        step(f"ansible-playbook playbooks/demo.yml (lease {SYSTEM} for 30m, install {DISTRO['name']}, use it, "
             "return it)")
        playbook_env = {
            **env, "LABLEASE_URL": url, "LABLEASE_TOKEN": token, "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
            "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".collections"),
            "ANSIBLE_FORCE_COLOR": env.get("ANSIBLE_FORCE_COLOR", "0"),
        }
        played = subprocess.run([str(BIN / "ansible-playbook"), "playbooks/demo.yml", "-e", f"demo_system={SYSTEM}",
                                 "-e", f"demo_distro={DISTRO['name']}"],
                                cwd=ROOT, env=playbook_env, check=False)
        if played.returncode != 0:
            print(f"\nthe playbook failed (exit {played.returncode})", file=sys.stderr)
            return 1

        if not show_what_happened(url, token):
            return 1
        step("Demo finished: the system was leased, installed, used and returned")
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
        stop_machines()
        print("server stopped")


if __name__ == "__main__":
    sys.exit(main())
