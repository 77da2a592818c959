"""`make demo`: a real server, simulated machines, and a playbook that leases, installs and returns one.

1. start `lablease-server serve` on SQLite in ./.lablease-demo (fresh each time) on a free loopback port;
2. import playbooks/files/demo-systems.yml (vm1 and vm2 are simulated machines), register a distro tree,
   and create a user with a token;
3. run `ansible-playbook playbooks/demo.yml`: the lease role reserves vm1.lab.test for 30 minutes,
   installs Fedora-40 on it (netboot config, power cycle, kickstart, installer callbacks), waits until
   the installed system has booted, runs a task, and returns it;
4. show what happened (the machine's console, its usage history, the power and netboot commands) and
   check over the API that the system was returned and powered off;
5. print the web pages' address and the demo user's password; on a terminal, keep the server up until
   Enter or Ctrl-C (not on a terminal, as in CI, end at once); stop the server whatever happens.
"""
from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import select
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

DEMO_PASSWORD = secrets.token_urlsafe(9)  # the demo user's web sign-in, new each run (the demo is on loopback)

def step(text: str) -> None:
    print(f"\n==> {text}", flush=True)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def admin(env: dict, *args: str, stdin: str | None = None) -> str:
    result = subprocess.run([str(BIN / "lablease-server"), *args], env=env, capture_output=True, text=True, check=False,
                            input=stdin)
    if result.returncode != 0:
        raise SystemExit(f"lablease-server {' '.join(args)} failed:\n{result.stderr}")
    return result.stdout.strip()


def api(url: str, token: str, path: str, body: dict | None = None):
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url + "/api/v1" + path, data=data, headers=headers)
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.load(answer)


def wait_powered_off(url: str, token: str, system: str = SYSTEM, timeout: float = 20) -> None:
    """Until the server has the system off: the release action (power off) runs through the worker's queue."""
    deadline = time.monotonic() + timeout
    while api(url, token, f"/systems/{system}")["power_state"] != "off" and time.monotonic() < deadline:
        time.sleep(0.5)


def show_what_happened(url: str, token: str, system: str = SYSTEM, console: Path | None = None) -> bool:
    """The machine's console (when given), its usage history and its commands; True when it was returned
    and powered off."""
    wait_powered_off(url, token, system)
    if console is not None and console.exists():
        step(f"The simulated machine's console ({console.relative_to(ROOT)})")
        print(console.read_text().rstrip())
    step(f"{system}: usage history")
    for change in api(url, token, f"/systems/{system}/usage")["changes"]:
        print(f"  {change['at']}  {change['field']}: {change['old']} -> {change['new']}")
    step(f"{system}: power and netboot commands, oldest first")
    for command in reversed(api(url, token, f"/systems/{system}/commands")):
        print(f"  {command['created_at']}  {command['action']:<16} {command['status']} "
              f"(attempts {command['attempts']})")
    found = api(url, token, f"/systems/{system}")
    held = api(url, token, f"/reservations?system={system}&active=true")
    if found["reservation"] is not None or held or found["power_state"] != "off":
        print(f"{system} is still reserved or powered: {found['reservation']}, {found['power_state']}",
              file=sys.stderr)
        return False
    last = api(url, token, f"/reservations?system={system}&active=false")[0]
    step(f"{system} was returned and powered off")
    print(f"reservation {last['id']} by {last['user']} ran {last['start']} .. {last['end']}, state {last['state']}, "
          f"returned at {last['returned_at']}")
    return True


def wait_ready(url: str, process: subprocess.Popen, data: Path = DATA) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited ({process.returncode}); see {data / 'server.log'}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise SystemExit(f"the server did not answer within 30 s; see {data / 'server.log'}")


def machine_running(pid: int, state_dir: Path) -> bool:
    """pid is the machine of state_dir (its command line names the directory), not a stranger that reused it."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return False
    return str(state_dir) in argv


def stop_machines(data: Path = DATA, kind: str = "virtual") -> list[int]:
    """Machines (data/<kind>/<fqdn>/pid) run in their own sessions, like real ones; returning the system powered
    it off, but if the demo failed half-way, do not leave any behind. The pids of those it had to stop."""
    stopped = []
    for pid_file in sorted(data.glob(f"{kind}/*/pid")):
        try:
            pid = int(pid_file.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            continue
        if not machine_running(pid, pid_file.parent):
            continue
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(pid, sig)
            except (ProcessLookupError, PermissionError):
                break
            deadline = time.monotonic() + 5
            while machine_running(pid, pid_file.parent) and time.monotonic() < deadline:
                time.sleep(0.1)
            if not machine_running(pid, pid_file.parent):
                break
        stopped.append(pid)
    return stopped


def server_env(data: Path, port: int, **settings: str) -> dict:
    """The environment of the demo's server and of `lablease-server` admin commands: SQLite in data."""
    env = {**os.environ, "LABLEASE_DATA_DIR": str(data), "LABLEASE_LISTEN": f"127.0.0.1:{port}"}
    env.pop("LABLEASE_DATABASE_URL", None)  # the demo always runs on SQLite in its data dir
    env.update({f"LABLEASE_{key.upper()}": value for key, value in settings.items()})
    return env


def create_database_and_users(env: dict, data: Path, systems: Path | None = None) -> tuple[str, str]:
    """A fresh database in data (systems imported from a file, if given); the tokens of 'demo' and 'labadmin'."""
    step(f"Creating a SQLite database in {data.relative_to(ROOT)}")
    print(admin(env, "init"))
    if systems is not None:
        step(f"Importing systems from {systems.relative_to(ROOT)}")
        print(admin(env, "system", "import", str(systems)))
    step("Creating user 'demo' and an administrator, each with an API token")
    token = admin(env, "user", "add", "demo")
    admin_token = admin(env, "user", "add", "labadmin", "--admin")
    print("tokens created (shown once, kept in this process only)")
    admin(env, "user", "passwd", "demo", stdin=DEMO_PASSWORD + "\n")  # for the web pages
    return token, admin_token


def show_the_pages(url: str) -> None:
    """Where the web pages are, and who can sign in; on a terminal the server stays up until Enter or Ctrl-C."""
    step("The web pages")
    print(f"open {url}/ and sign in as user 'demo' with password {DEMO_PASSWORD!r}")
    if not sys.stdin.isatty():
        return  # CI: nobody to click; the demo ends on its own
    try:  # a Ctrl-C may come as soon as the prompt is shown, while it is still being written
        print("the server stays up for you to click around: press Enter (or Ctrl-C) to stop it ", end="", flush=True)
        # Not input(): a Ctrl-C pressed in the instant between its prompt and its read is noted but never
        # raised (the read then blocks on). Waiting in half-second slices raises a noted Ctrl-C at once.
        while not select.select([sys.stdin], [], [], 0.5)[0]:
            pass
        sys.stdin.readline()
    except KeyboardInterrupt:
        print()


@contextlib.contextmanager
def running_server(env: dict, url: str, data: Path, machines: str = "virtual"):
    """`lablease-server serve` for the `with` block; stopped afterwards whatever happens, and with it any machine
    of kind `machines` left running."""
    step(f"Starting lablease-server serve on {url} (the API and its worker)")
    log = open(data / "server.log", "ab")
    server = subprocess.Popen([str(BIN / "lablease-server"), "serve", "--workers", "1"], env=env,
                              stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_ready(url, server, data)
        print("server is up")
        yield server
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(10)
        log.close()
        left = stop_machines(data, machines)
        if left:
            print(f"stopped {len(left)} {machines} machine(s) left running: pid {', '.join(map(str, left))}")
        print("server stopped")


def run_playbook(env: dict, url: str, token: str, system: str, distro: str) -> bool:
    """ansible-playbook playbooks/demo.yml on system with distro, as user 'demo'; True when it passed."""
    step(f"ansible-playbook playbooks/demo.yml (lease {system} for 30m, install {distro}, use it, return it)")
    playbook_env = {
        **env, "LABLEASE_URL": url, "LABLEASE_TOKEN": token, "PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}",
        "ANSIBLE_CONFIG": str(ROOT / "ansible.cfg"), "ANSIBLE_COLLECTIONS_PATH": str(ROOT / ".collections"),
        "ANSIBLE_FORCE_COLOR": env.get("ANSIBLE_FORCE_COLOR", "0"),
    }
    played = subprocess.run([str(BIN / "ansible-playbook"), "playbooks/demo.yml", "-e", f"demo_system={system}",
                             "-e", f"demo_distro={distro}"],
                            cwd=ROOT, env=playbook_env, check=False)
    if played.returncode != 0:
        print(f"\nthe playbook failed (exit {played.returncode})", file=sys.stderr)
        return False
    return True


def main() -> int:
    shutil.rmtree(DATA, ignore_errors=True)
    DATA.mkdir()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = server_env(DATA, port)
    token, admin_token = create_database_and_users(env, DATA, SYSTEMS)
    with running_server(env, url, DATA):
        step(f"Registering distro tree {DISTRO['name']} {DISTRO['arch']} (as labadmin)")
        tree = api(url, admin_token, "/distro-trees", DISTRO)
        print(f"distro tree {tree['id']}: {tree['name']} {tree['variant']} {tree['arch']} at {tree['url']}")
        if not run_playbook(env, url, token, SYSTEM, DISTRO["name"]):
            return 1
        if not show_what_happened(url, token, SYSTEM, DATA / "virtual" / SYSTEM / "console.log"):
            return 1
        step("Demo finished: the system was leased, installed, used and returned")
        show_the_pages(url)
        return 0


if __name__ == "__main__":
    sys.exit(main())
