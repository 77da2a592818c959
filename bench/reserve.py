"""Reserve throughput over HTTP, beside two references on the same gunicorn settings.

    .venv/bin/python bench/reserve.py [--seconds 8] [--connections 16]

For SQLite and PostgreSQL (a throwaway server from tests/support/postgres.py)
it measures, with gunicorn gthread 2 workers x 4 threads on loopback (lablease too, though
`serve` defaults to gevent):

  hello     GET /health of the lablease app (no database)
  minimal   a reserve written here: plain WSGI, parse JSON, one atomic
            check-and-insert (SQLite BEGIN IMMEDIATE; PostgreSQL INSERT ...
            ON CONFLICT DO NOTHING against an exclusion constraint), JSON out
  lablease  POST /api/v1/reservations of the real server (token auth, policy,
            activity log, worker wake-up)

and prints requests/s, p50, p99 and the ratio lablease / minimal (aim >= 0.5), and the server's CPU per
request (all its processes: gunicorn's arbiter and workers, lablease's worker), which does not depend on how
the kernel dealt the connections to gunicorn's workers (all 16 to one of them, now and then: that run's rate
is then one process's) nor on what else the machine runs.
Every request books a window of its own on one of 16 systems, so all of
them succeed (a non-2xx answer is reported). The load generator is wrk
(installed from Debian when missing and run as root), else Python threads with
keep-alive sessions; the output says which. Both share the machine's cores with
the server, so the figures are lower bounds. Bounded: each run lasts --seconds.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.live import BIN, LiveServer  # noqa: E402
from tests.support.postgres import ThrowawayPostgres, free_port  # noqa: E402

import lease_ops  # noqa: E402 - bench/lease_ops.py, beside this file

WORKERS, THREADS = 2, 4
SYSTEMS = 16
BENCH_DB = "LABLEASE_BENCH_MINIMAL_DB"


# --- the minimal reserve (served by gunicorn from this module: reserve:minimal_app) ---------------

_local = threading.local()


def _connection():
    conn = getattr(_local, "conn", None)
    if conn is None:
        url = os.environ[BENCH_DB]
        if url.startswith("sqlite:"):
            import sqlite3

            conn = sqlite3.connect(url.removeprefix("sqlite:///"), isolation_level=None, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA busy_timeout=15000")
        else:
            import psycopg

            conn = psycopg.connect(url, autocommit=True)
        _local.conn = conn
    return conn


def _book_sqlite(conn, system: str, start: str, end: str) -> int | None:
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute("SELECT end_at FROM bookings WHERE system = ? AND start_at < ? "
                           "ORDER BY start_at DESC LIMIT 1", (system, end)).fetchone()
        if row is not None and row[0] > start:
            return None
        booking_id = conn.execute("INSERT INTO bookings (system, start_at, end_at) VALUES (?, ?, ?)",
                                  (system, start, end)).lastrowid
        conn.execute("COMMIT")
        return booking_id
    finally:
        if conn.in_transaction:
            conn.execute("ROLLBACK")


def _book_postgresql(conn, system: str, start: str, end: str) -> int | None:
    row = conn.execute("INSERT INTO bookings (system, start_at, end_at) VALUES (%s, %s, %s) "
                       "ON CONFLICT DO NOTHING RETURNING id", (system, start, end)).fetchone()
    return row[0] if row else None


def minimal_app(environ, start_response):
    if environ["REQUEST_METHOD"] != "POST":
        start_response("405 Method Not Allowed", [("Content-Type", "application/json")])
        return [b'{"status": 405}']
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = json.loads(environ["wsgi.input"].read(length))
    conn = _connection()
    book = _book_postgresql if os.environ[BENCH_DB].startswith("postgresql") else _book_sqlite
    booking_id = book(conn, body["system"], body["start"], body["end"])
    if booking_id is None:
        start_response("409 Conflict", [("Content-Type", "application/json")])
        return [b'{"status": 409}']
    answer = json.dumps({"id": booking_id, "system": body["system"], "start": body["start"], "end": body["end"]})
    start_response("201 Created", [("Content-Type", "application/json")])
    return [answer.encode()]


def create_minimal_schema(url: str) -> None:
    if url.startswith("sqlite:"):
        import sqlite3

        with sqlite3.connect(url.removeprefix("sqlite:///")) as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("CREATE TABLE bookings (id INTEGER PRIMARY KEY, system TEXT NOT NULL, "
                         "start_at TEXT NOT NULL, end_at TEXT NOT NULL)")
            conn.execute("CREATE INDEX ix_bookings_system_start ON bookings (system, start_at)")
        return
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE EXTENSION IF NOT EXISTS btree_gist")
        conn.execute("CREATE TABLE bookings (id serial PRIMARY KEY, system text NOT NULL, "
                     "start_at timestamptz NOT NULL, end_at timestamptz NOT NULL, "
                     "EXCLUDE USING gist (system WITH =, tstzrange(start_at, end_at) WITH &&))")


class MinimalServer:
    def __init__(self, url: str, workdir: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = open(workdir / "minimal.log", "ab")
        env = {**os.environ, BENCH_DB: url}
        self.process = subprocess.Popen(
            [str(BIN / "gunicorn"), "-k", "gthread", "-w", str(WORKERS), "--threads", str(THREADS),
             "-b", f"127.0.0.1:{self.port}", "--chdir", str(Path(__file__).parent), "reserve:minimal_app"],
            env=env, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 30
        while True:
            try:
                requests.get(self.url, timeout=1)
                return
            except (requests.ConnectionError, requests.Timeout):  # a busy machine: workers still booting
                if time.monotonic() > deadline or self.process.poll() is not None:
                    raise RuntimeError("minimal server did not start") from None
                time.sleep(0.1)

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGTERM)
        self.process.wait(20)
        self.log.close()


# --- the server's CPU time ------------------------------------------------------------------------

def _cpu_seconds(roots: list[int]) -> float:
    """User + system CPU seconds of the processes `roots` and all their descendants, as /proc has them."""
    parents, times = {}, {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except OSError:  # gone meanwhile
            continue
        parents[int(entry)] = int(fields[1])
        times[int(entry)] = int(fields[11]) + int(fields[12])
    tree, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid not in tree:
            tree.add(pid)
            todo += [child for child, parent in parents.items() if parent == pid]
    return sum(times.get(pid, 0) for pid in tree) / os.sysconf("SC_CLK_TCK")


class ServerCpu:
    """A load generator whose every run also says the server's CPU milliseconds per request (`cpu_ms`)."""

    def __init__(self, load, roots: list[int]):
        self.load, self.roots, self.name = load, roots, load.name

    @property
    def script(self):  # wrk's script (lease_ops swaps it); absent for the Python load, as on the load itself
        return self.load.script

    @script.setter
    def script(self, value) -> None:
        self.load.script = value

    def run(self, *args, **kwargs) -> dict:
        before = _cpu_seconds(self.roots)
        result = self.load.run(*args, **kwargs)
        result["cpu_ms"] = (_cpu_seconds(self.roots) - before) * 1000 / max(1, result["requests"])
        return result


# --- load generation ----------------------------------------------------------------------------

LUA = textwrap.dedent("""
    -- Every request books its own 60 s window on one of the systems: none can conflict.
    local threads = 0
    function setup(thread)
      thread:set("tid", threads)
      threads = threads + 1
    end
    function init(args)
      base, systems, nthreads, prefix, path = tonumber(args[1]), tonumber(args[2]), tonumber(args[3]), args[4], args[5]
      headers = {["Content-Type"] = "application/json"}
      if args[6] then headers["Authorization"] = "Bearer " .. args[6] end
      counter = 0
      per_thread = systems / nthreads
    end
    function request()
      counter = counter + 1
      local slot = counter * nthreads + tid
      local system = string.format("%s%02d.bench.test", prefix, tid * per_thread + counter % per_thread)
      local start = base + slot * 60
      local body = string.format('{"system": "%s", "start": "%s", "end": "%s"}', system,
        os.date("!%Y-%m-%dT%H:%M:%SZ", start), os.date("!%Y-%m-%dT%H:%M:%SZ", start + 60))
      return wrk.format("POST", path, headers, body)
    end
""")


def ensure_wrk() -> str | None:
    found = shutil.which("wrk")
    if found or os.geteuid() != 0 or not shutil.which("apt-get"):
        return found
    print("installing wrk (Debian package) ...", file=sys.stderr)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    result = subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], env=env, capture_output=True)
    if result.returncode != 0:
        subprocess.run(["apt-get", "update", "-qq"], env=env, capture_output=True)
        subprocess.run(["apt-get", "install", "-y", "-qq", "wrk"], env=env, capture_output=True)
    return shutil.which("wrk")


def _ms(value: str, unit: str) -> float:
    return float(value) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[unit]


class Wrk:
    name = "wrk -t2 (keep-alive)"

    def __init__(self, binary: str, workdir: Path, connections: int):
        self.binary = binary
        self.connections = connections
        self.script = workdir / "reserve.lua"
        self.script.write_text(LUA)

    def run(self, url: str, path: str, seconds: float, token: str | None = None, post: bool = False,
            base: int = 0, prefix: str = "s") -> dict:
        args = [self.binary, "-t2", f"-c{self.connections}", f"-d{max(1, round(seconds))}s", "--latency", "--timeout", "10s"]
        if token and not post:
            args += ["-H", f"Authorization: Bearer {token}"]
        if post:
            args += ["-s", str(self.script), url, "--", str(base), str(SYSTEMS), "2", prefix, path]
            args += [token] if token else []
        else:
            args += [url + path]
        output = subprocess.run(args, capture_output=True, text=True, check=True).stdout
        latency = dict(re.findall(r"^\s+(50|99)%\s+([\d.]+\w+)", output, re.M))
        result = {
            "rps": float(re.search(r"Requests/sec:\s+([\d.]+)", output).group(1)),
            "requests": int(re.search(r"(\d+) requests in", output).group(1)),
            "errors": int(m.group(1)) if (m := re.search(r"Non-2xx or 3xx responses: (\d+)", output)) else 0,
        }
        for pct in ("50", "99"):
            value, unit = re.match(r"([\d.]+)(\w+)", latency[pct]).groups()
            result[f"p{pct}"] = _ms(value, unit)
        socket_errors = re.search(r"Socket errors: (.*)", output)
        if socket_errors:
            result["socket_errors"] = socket_errors.group(1)
        return result


class PythonLoad:
    name = "Python threads with requests.Session keep-alive"

    def __init__(self, connections: int):
        self.connections = connections

    def run(self, url: str, path: str, seconds: float, token: str | None = None, post: bool = False,
            base: int = 0, prefix: str = "s") -> dict:
        latencies: list[float] = []
        errors = [0]
        stop = time.monotonic() + seconds

        def client(index: int):
            session = requests.Session()
            if token:
                session.headers["Authorization"] = f"Bearer {token}"
            counter = 0
            while time.monotonic() < stop:
                counter += 1
                began = time.perf_counter()
                if post:
                    start = datetime.fromtimestamp(base + (counter * self.connections + index) * 60, timezone.utc)
                    body = {"system": f"{prefix}{index % SYSTEMS:02d}.bench.test",
                            "start": start.isoformat().replace("+00:00", "Z"),
                            "end": (start + timedelta(seconds=60)).isoformat().replace("+00:00", "Z")}
                    response = session.post(url + path, json=body, timeout=10)
                else:
                    response = session.get(url + path, timeout=10)
                latencies.append((time.perf_counter() - began) * 1000)
                if response.status_code >= 300:
                    errors[0] += 1
            session.close()

        threads = [threading.Thread(target=client, args=(i,)) for i in range(self.connections)]
        began = time.monotonic()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        elapsed = time.monotonic() - began
        cuts = statistics.quantiles(latencies, n=100)
        return {"rps": len(latencies) / elapsed, "requests": len(latencies), "errors": errors[0],
                "p50": cuts[49], "p99": cuts[98]}


# --- the runs -------------------------------------------------------------------------------------

def start_lablease(workdir: Path, url: str) -> tuple[LiveServer, subprocess.Popen]:
    """The real server with the production gunicorn settings.

    The background worker runs as its own `lablease-server worker` process
    rather than as a thread of gunicorn's arbiter: the arbiter forks its workers
    while that thread holds SQLite and SQLAlchemy state, which can hang or break
    a worker (see docs/performance.md). Wake-ups still reach it.
    """
    # gthread like the minimal reserve (serve's default is gevent, for slow clients): the same server for both
    server = LiveServer(workdir / "data", url, settings={"gunicorn_worker_class": "gthread"}, workers=WORKERS,
                        threads=THREADS, run_worker=False).start()
    worker = subprocess.Popen([str(BIN / "lablease-server"), "worker"], env=server.env, stdout=server.log,
                              stderr=subprocess.STDOUT, start_new_session=True)
    systems = workdir / "systems.yml"
    systems.write_text("systems:\n" + "".join(
        f"  - {{fqdn: r{i:02d}.bench.test, arch: x86_64, condition: manual}}\n" for i in range(SYSTEMS)))
    server.admin_cli("system", "import", str(systems))
    return server, worker


def bench_database(url: str, minimal_url: str, load, seconds: float, workdir: Path) -> dict:
    results = {}
    base = int(time.time()) + 86400
    server, worker = start_lablease(workdir / "lablease", url)
    measured, load = load, ServerCpu(load, [server.process.pid, worker.pid])
    try:
        token = server.tokens["admin"]
        load.run(server.url, "/health", 1)  # warm up
        results["hello"] = load.run(server.url, "/health", seconds)
        load.run(server.url, "/api/v1/reservations", 1, token=token, post=True, base=base, prefix="r")
        results["lablease"] = load.run(server.url, "/api/v1/reservations", seconds, token=token, post=True,
                                       base=base + 86400 * 30, prefix="r")
        results.update(lease_ops.run(load, server.url, url, token, seconds, workdir),  # extend, heartbeat, return
                       authentication=lease_ops.authentication(url, token))
    finally:
        worker.terminate()
        worker.wait(10)
        server.stop()

    create_minimal_schema(minimal_url)
    minimal = MinimalServer(minimal_url, workdir)
    load = ServerCpu(measured, [minimal.process.pid])
    try:
        load.run(minimal.url, "/reserve", 1, post=True, base=base, prefix="r")
        results["minimal"] = load.run(minimal.url, "/reserve", seconds, post=True, base=base + 86400 * 30,
                                      prefix="r")
    finally:
        minimal.stop()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=8, help="length of each measured run")
    parser.add_argument("--connections", type=int, default=16, help="concurrent clients")
    parser.add_argument("--python-load", action="store_true", help="use Python threads even when wrk is there")
    args = parser.parse_args()

    wrk = None if args.python_load else ensure_wrk()
    workdir = Path(tempfile.mkdtemp(prefix="lablease-bench-"))
    load = Wrk(wrk, workdir, args.connections) if wrk else PythonLoad(args.connections)
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; load generator: {load.name}, "
          f"{args.connections} connections, {args.seconds:g} s per run, on the same machine")
    print(f"server: gunicorn gthread {WORKERS} workers x {THREADS} threads on 127.0.0.1; "
          "load average before: " + " ".join(f"{x:.2f}" for x in os.getloadavg()) + "\n")

    postgres = ThrowawayPostgres().start()
    table = {}
    try:
        (workdir / "sqlite").mkdir()
        table["sqlite"] = bench_database(f"sqlite:///{workdir / 'sqlite' / 'lablease.db'}",
                                         f"sqlite:///{workdir / 'sqlite' / 'minimal.db'}", load, args.seconds,
                                         workdir / "sqlite")
        minimal_pg = postgres.create_database("minimal").replace("postgresql+psycopg://", "postgresql://")
        (workdir / "postgresql").mkdir()
        table["postgresql"] = bench_database(postgres.create_database("bench"), minimal_pg, load, args.seconds,
                                             workdir / "postgresql")
    finally:
        postgres.stop()

    print(f"{'database':<11} {'case':<9} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'requests':>9} {'non-2xx':>8} "
          f"{'CPU ms/req':>10}")
    for kind, results in table.items():
        for case in ("hello", "minimal", "lablease"):
            r = results[case]
            print(f"{kind:<11} {case:<9} {r['rps']:>8.0f} {r['p50']:>8.2f} {r['p99']:>8.2f} {r['requests']:>9} "
                  f"{r['errors']:>8} {r['cpu_ms']:>10.2f}"
                  + (f"  socket errors: {r['socket_errors']}" if "socket_errors" in r else ""))
    print()
    lease_ops.report(table)
    for kind, results in table.items():
        ratio = results["lablease"]["rps"] / results["minimal"]["rps"]
        verdict = "meets" if ratio >= 0.5 else "misses"
        print(f"{kind}: lablease / minimal reserve = {ratio:.2f} ({verdict} the 0.5 aim); "
              f"lablease / hello = {results['lablease']['rps'] / results['hello']['rps']:.2f}; "
              f"server CPU per request: minimal / lablease = "
              f"{results['minimal']['cpu_ms'] / results['lablease']['cpu_ms']:.2f}")
    print("load average after: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
