"""The event feed's long polls: waiting clients against the database connections the server holds, and latency.

    .venv/bin/python bench/events.py [--clients 10,100,300]

A real `lablease-server serve` (gunicorn's default gevent worker class, one API worker, and the lablease
worker) on a throwaway PostgreSQL (tests/support/postgres.py). For each number of clients, that many
threads long-poll `GET /api/v1/events?after=<cursor>&wait=60` as an admin; while they wait, the connections
the server holds are counted in pg_stat_activity (beyond those it holds with nobody waiting); then one event
is written through the API (a loan taken back: `loan.returned`) and each client's latency is the time from
that request's answer to its own answer. Printed: clients, connections held while they wait (the most seen
over a second), latency p50 and max, and how many clients got the event. Bounded: about 10 s per row.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import psycopg
import requests

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.live import LiveServer  # noqa: E402
from tests.support.postgres import ThrowawayPostgres  # noqa: E402

FQDN = "bench.lab.test"


def connections(postgres: ThrowawayPostgres) -> int:
    """The server's connections to its database (this probe's own left out)."""
    with psycopg.connect(f"host=127.0.0.1 port={postgres.port} user=postgres dbname=bench", autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = 'bench' "
                            "AND pid <> pg_backend_pid()").fetchone()[0]


def most_connections(postgres: ThrowawayPostgres, seconds: float = 1.0) -> int:
    deadline, most = time.monotonic() + seconds, 0
    while time.monotonic() < deadline:
        most = max(most, connections(postgres))
        time.sleep(0.05)
    return most


def row(server: LiveServer, postgres: ThrowawayPostgres, clients: int, idle: int) -> tuple:
    token = server.tokens["admin"]
    headers = {"Authorization": f"Bearer {token}"}
    cursor = requests.get(server.url + "/api/v1/events", params={"after": "now"}, headers=headers,
                          timeout=30).json()["cursor"]
    answered: list[float] = []
    lock = threading.Lock()

    def wait() -> None:
        with requests.Session() as session:
            answer = session.get(server.url + "/api/v1/events", params={"after": cursor, "wait": "60"},
                                 headers=headers, timeout=90).json()
        if answer["events"]:
            with lock:
                answered.append(time.monotonic())

    threads = [threading.Thread(target=wait, daemon=True) for _ in range(clients)]
    for thread in threads:
        thread.start()
    time.sleep(2)  # let every request reach the server and start waiting
    held = most_connections(postgres) - idle
    server.admin.post(f"/systems/{FQDN}/loan", json={"recipient": "admin2"})
    server.admin.delete(f"/systems/{FQDN}/loan")
    written = time.monotonic()
    for thread in threads:
        thread.join(90)
    latencies = sorted(moment - written for moment in answered)
    p50 = statistics.median(latencies) if latencies else float("nan")
    worst = latencies[-1] if latencies else float("nan")
    return clients, held, p50 * 1000, worst * 1000, len(latencies)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", default="10,100,300", help="numbers of waiting clients, comma separated")
    args = parser.parse_args()
    postgres = ThrowawayPostgres().start()
    server = None
    try:
        url = postgres.create_database("bench")
        server = LiveServer(Path(tempfile.mkdtemp(prefix="lablease-bench-events-")), url, workers=1).start()
        server.add_user("admin2")
        server.admin_cli("system", "add", FQDN, "--arch", "x86_64")
        time.sleep(1)
        idle = most_connections(postgres)
        print(f"server connections with nobody waiting: {idle} (the API worker's pool, the lablease worker's)")
        print(f"{'clients':>8} {'connections held':>17} {'p50 ms':>8} {'max ms':>8} {'got it':>7}")
        for clients in (int(n) for n in args.clients.split(",")):
            print("%8d %17d %8.1f %8.1f %7d" % row(server, postgres, clients, idle), flush=True)
    finally:
        if server is not None:
            server.stop()
        postgres.stop()


if __name__ == "__main__":
    main()
