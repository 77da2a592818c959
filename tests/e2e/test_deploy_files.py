"""The deployment files in deploy/ are checked by the tools that will read them (docs/deployment.md).

- systemd units: `systemd-analyze verify` (no warning at all) and `systemd-analyze security --offline`
  (an exposure threshold); their commands parse as `lablease-server` commands.
- Containerfile: parsed by BuildKit's own parser (the `dockerfile` package); its install step (pip install
  of server/) is carried out into a fresh virtualenv, whose `lablease-server` then runs `--help`, `init` and
  `backup` with the image's environment. Not tested here, for want of a container engine on these machines:
  building the image itself (the apt-get step, the base image, useradd) and running it.
- compose.yaml: `docker-compose config` (Debian's docker-compose validates it against the Compose schema
  without an engine); nothing is started.
- nginx: `nginx -t` on the site file with a throwaway certificate, then nginx itself (on ports of its own)
  in front of a real `lablease-server serve`: HTTPS with a token, the body limit (413), HSTS, the redirect.
The tools come from scripts/ensure-deploy-tools.sh; where one is missing the test skips, except under CI.
"""
from __future__ import annotations

import configparser
import os
import socket
import time
import shlex
import shutil
import subprocess
import sys
import venv
from pathlib import Path

import dockerfile
import pytest
import requests
import yaml

from lablease.agent import parser as agent_parser
from lablease.cli.server import parser
from lablease.config import Settings
from tests.support.live import LiveServer
from tests.support.postgres import free_port

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
UNITS = ("lablease-server.service", "lablease-worker.service")
INSTALLED = "/opt/lablease/bin/lablease-server"
BIN = Path(sys.executable).parent


def need(tool: str) -> str:
    found = shutil.which(tool)
    if found is None:
        if os.environ.get("CI"):
            pytest.fail(f"{tool} is missing under CI: scripts/ensure-deploy-tools.sh installs it")
        pytest.skip(f"{tool} not installed (scripts/ensure-deploy-tools.sh)")
    return found


def run(*command: str, **kwargs) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=120, **kwargs)


def unit(name: str) -> configparser.ConfigParser:
    config = configparser.ConfigParser(strict=False, interpolation=None, comment_prefixes=("#",))
    config.optionxform = str
    config.read_string((DEPLOY / "systemd" / name).read_text())
    return config


def lablease_command(words: list[str]):
    """The words after `lablease-server`, parsed as the real command line would (SystemExit if not)."""
    return parser().parse_args(words)


# --- systemd ------------------------------------------------------------------------------------

@pytest.fixture
def units(tmp_path):
    """The units as installed, their ExecStart pointing at this environment's lablease-server (verify
    checks that the program exists)."""
    for name in UNITS:
        text = (DEPLOY / "systemd" / name).read_text().replace(INSTALLED, str(BIN / "lablease-server"))
        (tmp_path / name).write_text(text)
    return [str(tmp_path / name) for name in UNITS]


def test_systemd_verifies_both_units_without_a_warning(units):
    result = run(need("systemd-analyze"), "verify", *units)
    assert result.returncode == 0 and result.stdout + result.stderr == "", result.stdout + result.stderr


def test_both_units_are_hardened(units):
    analyze = need("systemd-analyze")
    for path in units:
        result = run(analyze, "security", "--offline=yes", "--threshold=25", path)
        assert result.returncode == 0, result.stdout[-1500:]  # exposure 2.5 or less on systemd's 0-10 scale
        assert "OK" in result.stdout.splitlines()[-1], result.stdout[-300:]
    for name in UNITS:
        service = unit(name)["Service"]
        assert service["User"] == "lablease" and service["ProtectSystem"] == "strict", name
        assert (service["PrivateTmp"], service["NoNewPrivileges"], service["ProtectHome"]) == ("yes", "yes", "yes")
        data_dir = service["Environment"].split("LABLEASE_DATA_DIR=")[-1] if "DATA_DIR" in service["Environment"] \
            else None
        assert data_dir is None or data_dir in service["ReadWritePaths"].split(), name


def test_the_units_run_the_server_and_the_worker_apart():
    commands = {name: shlex.split(unit(name)["Service"]["ExecStart"]) for name in UNITS}
    assert all(words[0] == INSTALLED for words in commands.values())
    serve = lablease_command(commands["lablease-server.service"][1:])
    worker = lablease_command(commands["lablease-worker.service"][1:])
    assert (serve.command, serve.no_worker, worker.command) == ("serve", True, "worker")
    server = unit("lablease-server.service")["Service"]
    migrate = shlex.split(server["ExecStartPre"])  # the schema is migrated before the new code serves
    assert migrate[0] == INSTALLED and lablease_command(migrate[1:]).command == "init"
    assert shlex.split(server["ExecReload"]) == ["/bin/kill", "-HUP", "$MAINPID"]  # gunicorn's graceful reload
    assert "lablease-server.service" in unit("lablease-worker.service")["Unit"]["After"].split()
    sysusers = (DEPLOY / "systemd" / "lablease.sysusers").read_text().split("\n")
    assert any(line.split()[:2] == ["u", "lablease"] for line in sysusers if line and not line.startswith("#"))


def test_the_agent_unit_verifies_is_hardened_and_runs_the_agent(tmp_path):
    """lablease-agent.service (docs/lab-agents.md): as the others, and its stop ends what it runs."""
    text = (DEPLOY / "systemd" / "lablease-agent.service").read_text()
    installed = tmp_path / "lablease-agent.service"
    installed.write_text(text.replace("/opt/lablease/bin/lablease-agent", str(BIN / "lablease-agent")))
    analyze = need("systemd-analyze")
    result = run(analyze, "verify", str(installed))
    assert result.returncode == 0 and result.stdout + result.stderr == "", result.stdout + result.stderr
    result = run(analyze, "security", "--offline=yes", "--threshold=25", str(installed))
    assert result.returncode == 0, result.stdout[-1500:]
    service = unit("lablease-agent.service")["Service"]
    words = shlex.split(service["ExecStart"])
    assert words[0] == "/opt/lablease/bin/lablease-agent" and agent_parser().parse_args(words[1:]).command == "run"
    assert (service["User"], service["KillMode"], service["ProtectSystem"]) == ("lablease-agent", "control-group",
                                                                              "strict")


def test_the_agent_compose_file_is_valid_and_runs_the_agent():
    result = run(need("docker-compose"), "-f", str(DEPLOY / "compose.agent.yaml"), "config",
                 env={"PATH": os.environ["PATH"], "LABLEASE_AGENT_SERVER_URL": "https://lablease.example.com",
                      "LABLEASE_AGENT_LAB": "east"})
    assert result.returncode == 0, result.stderr
    agent = yaml.safe_load(result.stdout)["services"]["agent"]
    assert agent["entrypoint"] == ["lablease-agent"] and agent_parser().parse_args(agent["command"]).command == "run"
    settings = Settings(**{k.removeprefix("LABLEASE_").lower(): v for k, v in agent["environment"].items()})
    assert (settings.agent_lab, settings.agent_listen) == ("east", "0.0.0.0:8043")


# --- the OCI image --------------------------------------------------------------------------------

def instructions() -> list:
    return list(dockerfile.parse_file(str(DEPLOY / "Containerfile")))


def image_env() -> dict[str, str]:
    env = {}
    for step in instructions():
        if step.cmd == "ENV":
            env.update(zip(step.value[::2], step.value[1::2]))
    return env


def test_the_containerfile_builds_from_debian_python_and_runs_lablease_server_as_a_user():
    steps = instructions()
    assert steps[0].cmd == "FROM" and steps[0].value[0].startswith("python:3.11-") and "bookworm" in steps[0].value[0]
    by = {step.cmd: step for step in steps}
    assert by["USER"].value[0] not in ("root", "0")
    assert by["ENTRYPOINT"].json and by["ENTRYPOINT"].value == ("lablease-server",)
    assert lablease_command(list(by["CMD"].value)).command == "serve"
    assert by["VOLUME"].value[0] == image_env()["LABLEASE_DATA_DIR"]
    copied = [step.value for step in steps if step.cmd == "COPY"]
    assert ("server", "/src/server") in copied
    assert any("pip install --no-cache-dir /src/server" in step.value[0] for step in steps if step.cmd == "RUN")


def test_the_containerfile_install_step_gives_a_working_lablease_server(tmp_path):
    """pip install of server/ (as the image's RUN does) into a fresh virtualenv: the wheel is built as pip
    builds it (isolated, its build requirements from the index); its dependencies come from this
    environment's site-packages, so the test proves the package, its data files and its commands, not
    the resolution of its runtime dependencies from the index."""
    source = tmp_path / "server"  # a copy: setuptools leaves build/ and egg-info beside the sources it builds
    shutil.copytree(ROOT / "server", source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    wheels = tmp_path / "wheels"
    built = run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(wheels), str(source))
    assert built.returncode == 0, built.stderr[-2000:]
    fresh = tmp_path / "venv"
    venv.create(fresh, with_pip=False)
    site = next(fresh.glob("lib/python3*/site-packages"))
    env = {key: value for key, value in os.environ.items() if not key.startswith(("LABLEASE_", "PYTHONPATH"))}
    install = run(sys.executable, "-m", "pip", "--python", str(fresh / "bin" / "python"), "install", "-q",
                  "--no-deps", "--no-index", *map(str, wheels.glob("*.whl")), env=env)
    assert install.returncode == 0, install.stderr[-2000:]
    deps = next(Path(sys.executable).parent.parent.glob("lib/python3*/site-packages"))
    (site / "zz_dependencies.pth").write_text(f"{deps}\n")  # after the fresh one: lablease is found there

    env.update(image_env(), LABLEASE_DATA_DIR=str(tmp_path / "data"))
    server = str(fresh / "bin" / "lablease-server")
    where = run(str(fresh / "bin" / "python"), "-c", "import lablease; print(lablease.__file__)", env=env)
    assert where.stdout.startswith(str(site)), where.stdout + where.stderr
    for words in (["--help"], ["init"], ["backup", str(tmp_path / "site.tar.gz")]):
        result = run(server, *words, env=env, cwd=tmp_path)
        assert result.returncode == 0, (words, result.stderr[-2000:])
    assert (tmp_path / "data" / "lablease.db").exists() and (tmp_path / "site.tar.gz").exists()


# --- compose --------------------------------------------------------------------------------------

def compose_config(**env) -> subprocess.CompletedProcess:
    return run(need("docker-compose"), "-f", str(DEPLOY / "compose.yaml"), "config",
               env={"PATH": os.environ["PATH"], **env})


def test_the_compose_file_is_valid_and_runs_server_worker_and_postgresql():
    result = compose_config(POSTGRES_PASSWORD="s3cret")
    assert result.returncode == 0, result.stderr
    services = yaml.safe_load(result.stdout)["services"]
    assert set(services) == {"postgres", "init", "server", "worker"}
    lablease = [services[name] for name in ("init", "server", "worker")]
    assert [lablease_command(s["command"]).command for s in lablease] == ["init", "serve", "worker"]
    assert lablease_command(services["server"]["command"]).no_worker
    for service in lablease:
        assert service["build"]["dockerfile"] == "deploy/Containerfile"
        assert (Path(service["build"]["context"]) / service["build"]["dockerfile"]).exists()
        assert service["volumes"][0].startswith(f"lablease-data:{image_env()['LABLEASE_DATA_DIR']}")
        url = service["environment"]["LABLEASE_DATABASE_URL"]
        db = services["postgres"]["environment"]
        assert url == f"postgresql+psycopg://{db['POSTGRES_USER']}:s3cret@postgres/{db['POSTGRES_DB']}"
    assert services["server"]["depends_on"]["init"]["condition"] == "service_completed_successfully"
    assert services["init"]["depends_on"]["postgres"]["condition"] == "service_healthy"


def test_the_compose_file_refuses_to_start_without_a_database_password():
    result = compose_config()
    assert result.returncode != 0 and "set POSTGRES_PASSWORD" in result.stderr


# --- nginx ----------------------------------------------------------------------------------------

@pytest.fixture
def nginx_site(tmp_path):
    """The site file with a throwaway certificate (for 127.0.0.1), ports of its own, logs in tmp_path."""
    nginx, openssl = need("nginx"), need("openssl")
    made = run(openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
               "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(tmp_path / "key.pem"),
               "-out", str(tmp_path / "cert.pem"))
    assert made.returncode == 0, made.stderr
    site = (DEPLOY / "nginx" / "lablease.conf").read_text()
    ports = {"http": free_port(), "https": free_port()}
    local = (site.replace("/etc/lablease/tls/fullchain.pem", str(tmp_path / "cert.pem"))
             .replace("/etc/lablease/tls/privkey.pem", str(tmp_path / "key.pem"))
             .replace("/var/log/nginx/", f"{tmp_path}/")
             .replace("listen 80;", f"listen 127.0.0.1:{ports['http']};")
             .replace("listen 443 ssl;", f"listen 127.0.0.1:{ports['https']} ssl;")
             .replace("listen [::]:80;", "").replace("listen [::]:443 ssl;", ""))
    (tmp_path / "site.conf").write_text(local)
    (tmp_path / "nginx.conf").write_text(f"pid {tmp_path}/nginx.pid;\nerror_log {tmp_path}/error.log;\nevents {{}}\n"
                                         f"http {{\n    include {tmp_path}/site.conf;\n}}\n")
    return nginx, site, ports


def test_nginx_accepts_the_site_file(nginx_site, tmp_path):
    nginx, site, _ = nginx_site
    result = run(nginx, "-t", "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf"))
    assert result.returncode == 0 and "[warn]" not in result.stderr and "[emerg]" not in result.stderr, result.stderr
    settings = Settings()
    assert f"server {settings.listen};" in site  # proxies to where `serve` listens by default
    assert f"client_max_body_size {settings.max_body_bytes // 1024 // 1024}m;" in site


def test_requests_go_through_nginx_over_tls_to_a_real_server(nginx_site, tmp_path):
    nginx, _, ports = nginx_site
    server = LiveServer(tmp_path / "data").start()
    site = tmp_path / "site.conf"
    site.write_text(site.read_text().replace(f"server {Settings().listen};", f"server 127.0.0.1:{server.port};"))
    proxy = subprocess.Popen([nginx, "-p", str(tmp_path), "-c", str(tmp_path / "nginx.conf"), "-g", "daemon off;"],
                             stderr=subprocess.PIPE)
    try:
        https = f"https://127.0.0.1:{ports['https']}"
        wait_for_port(ports["https"], proxy)
        with requests.Session() as session:
            session.trust_env = False  # else REQUESTS_CA_BUNDLE would override the certificate below
            session.verify = str(tmp_path / "cert.pem")
            session.headers["Authorization"] = f"Bearer {server.tokens['admin']}"
            health = session.get(https + "/api/v1/health", timeout=10)
            assert health.status_code == 200 and "max-age" in health.headers["Strict-Transport-Security"]
            assert session.get(https + "/api/v1/systems", timeout=10).status_code == 200  # the token passes
            big = session.post(https + "/api/v1/reservations", data=b"x" * (2 * 1024 * 1024),
                               headers={"Content-Type": "application/json"}, timeout=30)
            assert big.status_code == 413 and big.headers["Content-Type"].startswith("text/html")  # nginx's own
            plain = session.get(f"http://127.0.0.1:{ports['http']}/api/v1/health", allow_redirects=False, timeout=10)
            assert plain.status_code == 301 and plain.headers["Location"].startswith("https://")
    finally:
        proxy.terminate()
        proxy.communicate(timeout=10)
        server.stop()


def wait_for_port(port: int, process: subprocess.Popen) -> None:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        assert process.poll() is None, process.stderr.read().decode()
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nginx did not listen on {port}")
