"""A throwaway PostgreSQL server for the test suite (Debian's binaries, a temp dir, a loopback port).

As root, the server runs as the `postgres` user through runuser (initdb
refuses root). When the binaries are missing the suite skips the PostgreSQL
cases, except under CI (CI set), where that is a failure.
"""
from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time


def find_bindir() -> str | None:
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), reverse=True)
    return os.path.dirname(candidates[0]) if candidates else None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# The suite's own server gives up durability for speed; a pair that fails over keeps PostgreSQL's defaults.
FAST = {"fsync": "off", "full_page_writes": "off", "synchronous_commit": "off"}


class ThrowawayPostgres:
    def __init__(self, settings: dict[str, str] | None = None):
        """`settings`: postgresql.conf values, on top of FAST and max_connections (a value None drops one)."""
        self.bindir = find_bindir()
        if self.bindir is None:
            raise RuntimeError("PostgreSQL server binaries not found (apt-get install postgresql)")
        self.root = tempfile.mkdtemp(prefix="lablease-pg-")
        self.port = free_port()
        self.as_root = os.geteuid() == 0
        merged = {**FAST, "max_connections": "300", **(settings or {})}
        self.settings = {key: value for key, value in merged.items() if value is not None}

    def _run(self, *args: str) -> None:
        command = list(args)
        if self.as_root:
            command = ["runuser", "-u", "postgres", "--", *command]
        subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd="/")

    def _make_root(self) -> None:
        os.makedirs(f"{self.root}/sock")
        os.chmod(self.root, 0o755)
        if self.as_root:
            shutil.chown(self.root, "postgres", "postgres")
            shutil.chown(f"{self.root}/sock", "postgres", "postgres")

    def start(self) -> ThrowawayPostgres:
        self._make_root()
        self._run(f"{self.bindir}/initdb", "-D", f"{self.root}/data", "-U", "postgres", "--auth=trust",
                  "-E", "UTF8", "--locale=C.UTF-8")
        self._configure()
        self.start_server()
        return self

    def start_standby(self, primary: ThrowawayPostgres) -> ThrowawayPostgres:
        """A hot standby streaming from `primary` (pg_basebackup -R: its primary_conninfo and standby.signal);
        initdb's pg_hba already lets loopback replicate. The primary's settings (e.g. synchronous_standby_names)
        decide whether it waits for this one."""
        self._make_root()
        self._run(f"{self.bindir}/pg_basebackup", "-h", "127.0.0.1", "-p", str(primary.port), "-U", "postgres",
                  "-D", f"{self.root}/data", "-R", "-X", "stream", "--checkpoint=fast")
        self._configure()
        self.start_server()
        return self

    def _configure(self) -> None:
        """The settings, at the end of postgresql.conf (not in pg_ctl -o, which passes its options through a
        shell: `synchronous_standby_names = '*'` would be a glob there)."""
        with open(f"{self.root}/data/postgresql.conf", "a") as conf:
            conf.write("".join(f"{key} = '{value}'\n" for key, value in self.settings.items()))

    def start_server(self) -> None:
        """Start the server on its data directory (again, after stop_server) and wait until it answers."""
        options = f"-c listen_addresses=127.0.0.1 -c port={self.port} -c unix_socket_directories={self.root}/sock"
        self._run(f"{self.bindir}/pg_ctl", "-D", f"{self.root}/data", "-l", f"{self.root}/server.log",
                  "-w", "-t", "60", "-o", options, "start")

    def promote(self) -> None:
        """A standby becomes a primary (pg_ctl promote), waiting until it takes writes."""
        self._run(f"{self.bindir}/pg_ctl", "-D", f"{self.root}/data", "-w", "-t", "60", "promote")

    def kill9(self) -> None:
        """SIGKILL the postmaster and every process of it at once, as a crashed host would leave them."""
        with open(f"{self.root}/data/postmaster.pid") as pid_file:
            postmaster = int(pid_file.readline())
        children = [int(entry) for entry in os.listdir("/proc") if entry.isdigit() and _parent(int(entry)) == postmaster]
        for pid in (postmaster, *children):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and _port_open(self.port):
            time.sleep(0.05)

    def is_up(self) -> bool:
        return _port_open(self.port)

    def stop_server(self, mode: str = "fast") -> None:
        """Stop the server, keeping its data (fast: every session is terminated, as a restart does)."""
        self._run(f"{self.bindir}/pg_ctl", "-D", f"{self.root}/data", "-m", mode, "-w", "stop")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str, template: str | None = None) -> str:
        import psycopg

        with psycopg.connect(f"host=127.0.0.1 port={self.port} user=postgres dbname=postgres",
                             autocommit=True) as conn:
            suffix = f" TEMPLATE {template}" if template else ""
            conn.execute(f"CREATE DATABASE {name}{suffix}")
        return self.url(name)

    def stop(self) -> None:
        try:
            if self.is_up():  # not after kill9
                self._run(f"{self.bindir}/pg_ctl", "-D", f"{self.root}/data", "-m", "immediate", "-w", "stop")
        finally:
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and _port_open(self.port):
                time.sleep(0.1)
            shutil.rmtree(self.root, ignore_errors=True)


def _parent(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return int(stat.read().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _port_open(port: int) -> bool:
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0
