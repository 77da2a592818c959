"""Expiry at scale: many reservations ending in the same second, returned by the worker's pass.

    .venv/bin/python bench/expiry.py [--reservations 10000] [--users 100] [--batch 500] [--automated]

On SQLite and on PostgreSQL (a throwaway server from tests/support/postgres.py)
it seeds, with Core inserts into the migrated schema, one system, booking and
reservation per reservation, all ending at the same second a few seconds
ahead (users with a mail address, so each return queues a notice; `--automated`
makes the systems Automated, so each freed system is also offered to the
scheduler). At that second it runs the worker's pass function
(worker/loop.py `run_due`, as `lablease-server worker` does) with the wall
clock until every reservation is returned, and prints the lateness of each
return (when its chunk committed and the worker logged it, minus the second it
ended): p50/p90/p99/max and the whole run, and checks each one was returned
once, with its two activity rows and its notice. Aim: all within 5 s.
"""
from __future__ import annotations

import argparse
import logging
import os
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "server" / "src"))

from sqlalchemy import func, insert, select  # noqa: E402

from lablease.config import Settings  # noqa: E402
from lablease.store.db import Database  # noqa: E402
from lablease.store.migrate import upgrade  # noqa: E402
from lablease.store.tables import Activity, Booking, Outbox, Reservation, Resource, System, User  # noqa: E402
from lablease.worker.loop import run_due  # noqa: E402
from tests.support.postgres import ThrowawayPostgres  # noqa: E402

AIM_SECONDS = 5.0
LEAD = timedelta(seconds=3)  # the reservations end this long after seeding is done


def seed(db: Database, count: int, users: int, condition: str, end: datetime) -> None:
    start = end - timedelta(hours=1)
    with db.writer.begin() as conn:
        conn.execute(insert(User), [{"id": u, "name": f"user{u}", "email": f"user{u}@lab.test", "is_admin": False,
                                     "disabled": False, "created_at": start} for u in range(1, users + 1)])
        for first in range(1, count + 1, 5000):
            ids = range(first, min(count, first + 4999) + 1)
            conn.execute(insert(Resource), [{"id": i, "kind": "system", "name": f"s{i:05d}.lab.test", "capacity": 1}
                                            for i in ids])
            conn.execute(insert(System), [{
                "id": i, "resource_id": i, "fqdn": f"s{i:05d}.lab.test", "arch": "x86_64", "memory_mb": 4096,
                "cpus": 4, "attributes": {}, "condition": condition, "usage": "idle", "power": {}, "netboot": {},
                "created_at": start} for i in ids])
            conn.execute(insert(Booking), [{
                "id": i, "resource_id": i, "start_at": start, "end_at": end, "quantity": 1, "exclusive": True,
                "kind": "reservation", "user_id": 1 + i % users, "created_at": start} for i in ids])
            conn.execute(insert(Reservation), [{
                "id": i, "system_id": i, "user_id": 1 + i % users, "booking_id": i, "kind": "manual",
                "start_at": start, "end_at": end, "due_at": end, "return_loan": False, "created_at": start}
                for i in ids])


class Returns(logging.Handler):
    """When the worker logged each return ("returned reservation N", right after its chunk committed)."""

    def __init__(self):
        super().__init__(logging.INFO)
        self.at: list[tuple[int, float]] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.msg == "%s %s" and record.args and record.args[0] == "returned reservation":
            self.at.append((record.args[1], record.created))


def bench(name: str, url: str, args) -> dict:
    db = Database(url)
    try:
        upgrade(db)
        settings = Settings(data_dir=str(args.workdir / name), smtp_host="127.0.0.1", worker_batch=args.batch)
        t = time.perf_counter()
        end = datetime.now(timezone.utc).replace(microsecond=0) + LEAD + timedelta(seconds=1 + args.reservations
                                                                                    // 4000)
        seed(db, args.reservations, args.users, "automated" if args.automated else "manual", end)
        print(f"{name}: seeded {args.reservations} reservations in {time.perf_counter() - t:.1f} s; "
              f"all end at {end:%H:%M:%S} UTC", flush=True)
        time.sleep(max(0.0, (end - datetime.now(timezone.utc)).total_seconds()))
        handler = Returns()
        log = logging.getLogger("lablease.worker")
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        passes, cpu = 0, time.process_time()
        try:
            while len(handler.at) < args.reservations:
                run_due(db, datetime.now(timezone.utc), settings)
                passes += 1
        finally:
            log.removeHandler(handler)
        cpu = time.process_time() - cpu  # the worker's own CPU (with SQLite's, in-process; not PostgreSQL's)
        lateness = sorted(at - end.timestamp() for _, at in handler.at)
        with db.reader.connect() as conn:
            once = len({ident for ident, _ in handler.at}) == len(handler.at) == args.reservations
            open_left = conn.execute(select(func.count()).select_from(Reservation).where(
                Reservation.returned_at.is_(None))).scalar()
            logged = conn.execute(select(func.count()).select_from(Activity).where(
                Activity.action == "expired")).scalar()
            notices = conn.execute(select(func.count()).select_from(Outbox)).scalar()
        assert once and open_left == 0, (once, open_left)
        assert logged == 2 * args.reservations and notices == args.reservations, (logged, notices)
        return {"lateness": lateness, "passes": passes, "cpu": cpu}
    finally:
        db.dispose()


def pct(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100)[q - 1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reservations", type=int, default=10_000)
    parser.add_argument("--users", type=int, default=100)
    parser.add_argument("--batch", type=int, default=Settings().worker_batch, help="the worker_batch setting")
    parser.add_argument("--automated", action="store_true", help="Automated systems (offered to the scheduler)")
    parser.add_argument("--databases", default="sqlite,postgresql")
    args = parser.parse_args()
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; load average before: "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()), flush=True)
    args.workdir = Path(tempfile.mkdtemp(prefix="lablease-bench-expiry-"))
    results = {}
    postgres = ThrowawayPostgres().start() if "postgresql" in args.databases else None
    try:
        for name in args.databases.split(","):
            url = f"sqlite:///{args.workdir / 'expiry.db'}" if name == "sqlite" else postgres.create_database("expiry")
            results[name] = bench(name, url, args)
    finally:
        if postgres is not None:
            postgres.stop()
        shutil.rmtree(args.workdir, ignore_errors=True)
    print(f"\n{args.reservations} reservations ending in the same second ({'Automated' if args.automated else 'Manual'}"
          f" systems, {args.users} users, worker_batch {args.batch}); lateness of each return, seconds; "
          f"load average after: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    print(f"{'database':<11} {'p50':>7} {'p90':>7} {'p99':>7} {'max':>7} {'passes':>7} {'CPU s':>7}  "
          f"aim: all within {AIM_SECONDS:g} s")
    for name, result in results.items():
        late = result["lateness"]
        verdict = "meets" if late[-1] <= AIM_SECONDS else f"misses by {late[-1] / AIM_SECONDS:.1f}x"
        print(f"{name:<11} {pct(late, 50):>7.2f} {pct(late, 90):>7.2f} {pct(late, 99):>7.2f} {late[-1]:>7.2f} "
              f"{result['passes']:>7} {result['cpu']:>7.2f}  {verdict} "
              "(every reservation returned once, with its activity and notice)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
