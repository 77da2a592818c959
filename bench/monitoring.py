"""What a /metrics scrape and a readiness probe cost in the database, over a site with years of history.

    .venv/bin/python bench/monitoring.py [--systems 1000] [--history 200000] [--repeat 50]

On SQLite and on PostgreSQL (a throwaway server from tests/support/postgres.py)
it builds the migrated schema, bulk-inserts systems, `history` returned
reservations, finished recipes and sent messages (plus a few open ones of
each), runs ANALYZE, and times, with medians and p95 over repetitions:

  snapshot    services.reads.monitoring.snapshot: every gauge /metrics reads
  readiness   services.reads.monitoring.readiness: the schema's revision, the newest heartbeat

Aim: both well under 10 ms whatever the history holds (they only count what is open).
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "server" / "src"))

from sqlalchemy import insert, text  # noqa: E402

from lablease.services.reads import monitoring  # noqa: E402
from lablease.services.handlers import unit_of_work  # noqa: E402
from lablease.store import migrate  # noqa: E402
from lablease.store.db import Database  # noqa: E402
from lablease.store.tables import Job, Outbox, Recipe, RecipeSet, Reservation, Resource, System, User
from lablease.store.worker_tables import WorkerHeartbeat
from tests.support.postgres import ThrowawayPostgres  # noqa: E402

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=timezone.utc)
OPEN = 50  # open reservations, queued recipes, pending messages


def fill(db: Database, systems: int, history: int) -> None:
    past = NOW - timedelta(days=700)
    with db.writer.begin() as conn:
        conn.execute(insert(User), [{"id": 1, "name": "u", "created_at": past}])
        conn.execute(insert(Resource), [{"id": i, "kind": "system", "name": f"s{i}"} for i in range(1, systems + 1)])
        conn.execute(insert(System), [{"id": i, "resource_id": i, "fqdn": f"s{i}.lab.test", "arch": "x86_64",
                                       "attributes": {}, "condition": ("manual", "automated")[i % 2],
                                       "usage": "idle", "power": {}, "netboot": {}, "created_at": past}
                                      for i in range(1, systems + 1)])
        conn.execute(insert(Reservation), [
            {"system_id": i % systems + 1, "user_id": 1, "start_at": past + timedelta(minutes=i),
             "end_at": past + timedelta(minutes=i + 1), "created_at": past,
             "returned_at": None if i < OPEN else past + timedelta(minutes=i + 1),
             "due_at": past + timedelta(days=800) if i < OPEN else None} for i in range(history)])
        conn.execute(insert(Job), [{"id": 1, "owner_id": 1, "submitted_at": past}])
        conn.execute(insert(RecipeSet), [{"id": 1, "job_id": 1, "queued_at": past}])
        conn.execute(insert(Recipe), [{"recipe_set_id": 1, "job_id": 1, "spec": {}, "task_results": [],
                                       "status": "queued" if i < OPEN else "completed",
                                       "queued_at": past + timedelta(minutes=i)} for i in range(history)])
        conn.execute(insert(Outbox), [{"channel": "webhook", "destination": "u", "subject": "s", "payload": {},
                                       "dedupe_key": f"k{i}", "status": "pending" if i < OPEN else "sent",
                                       "next_attempt_at": NOW if i < OPEN else None,
                                       "created_at": past + timedelta(minutes=i)} for i in range(history)])
        conn.execute(insert(WorkerHeartbeat), [{"worker": "w:1", "started_at": NOW, "beat_at": NOW}])
        conn.execute(text("ANALYZE"))


def timed(db: Database, work, repeat: int) -> tuple[float, float]:
    took = []
    for _ in range(repeat):
        started = time.perf_counter()
        with unit_of_work(db, write=False) as uow:
            work(uow)
        took.append((time.perf_counter() - started) * 1000)
    took.sort()
    return statistics.median(took), took[int(len(took) * 0.95) - 1]


def bench(kind: str, url: str, args) -> dict:
    db = Database(url)
    migrate.upgrade(db)
    fill(db, args.systems, args.history)
    got = {}
    data = monitoring.snapshot(unit_of_work(db, write=False).__enter__(), NOW)
    assert data["reservations"]["active"] == OPEN and data["recipe_queue"]["depth"] == OPEN, data
    got["snapshot"] = timed(db, lambda uow: monitoring.snapshot(uow, NOW), args.repeat)
    got["readiness"] = timed(db, lambda uow: monitoring.readiness(uow, NOW, timedelta(seconds=60)), args.repeat)
    db.dispose()
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=1000)
    parser.add_argument("--history", type=int, default=200000)
    parser.add_argument("--repeat", type=int, default=50)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="lablease-bench-"))
    postgres = ThrowawayPostgres().start()
    table = {}
    try:
        table["sqlite"] = bench("sqlite", f"sqlite:///{workdir / 'monitoring.db'}", args)
        table["postgresql"] = bench("postgresql", postgres.create_database("monitoring"), args)
    finally:
        postgres.stop()
        shutil.rmtree(workdir, ignore_errors=True)
    print(f"{args.systems} systems; {args.history} reservations, recipes and messages of history, {OPEN} open")
    print(f"{'':12}{'sqlite median/p95 ms':>24}{'postgresql median/p95 ms':>28}")
    for name in ("snapshot", "readiness"):
        cells = [f"{table[k][name][0]:.2f} / {table[k][name][1]:.2f}" for k in ("sqlite", "postgresql")]
        print(f"{name:12}{cells[0]:>24}{cells[1]:>28}")


if __name__ == "__main__":
    main()
