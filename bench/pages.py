"""Server-side render time of the web pages over a big site: 10,000 systems and 1,000,000 bookings.

    .venv/bin/python bench/pages.py [--systems 10000] [--bookings-per-system 100] [--repeat 10]

It builds a migrated SQLite database, bulk-inserts the systems and their bookings (Core inserts, as
bench/free_systems.py does), signs alice in through the real sign-in form, and times whole requests through
the WSGI application (routing, session check, use cases, jinja2) for each page, medians and p95 over the
repetitions. Aim: every page < 200 ms. A page added to the web UI adds a line to PAGES below.
"""
from __future__ import annotations

import argparse
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from werkzeug.test import Client  # noqa: E402

from bench.free_systems import populate  # noqa: E402
from lablease.api import create_app  # noqa: E402
from lablease.config import Settings  # noqa: E402
from lablease.services.auth import signin  # noqa: E402
from lablease.store.db import Database  # noqa: E402
from lablease.store.migrate import upgrade  # noqa: E402
from lablease.store.secrets import SecretBox, use_secrets  # noqa: E402
from lablease.store.uow import UnitOfWork  # noqa: E402

AIM_MS = 200.0
PAGES = [
    ("systems list, page 1", "/systems"),
    ("systems list, last page", "/systems?page=100"),
    ("systems grouped by pool", "/systems?group=pool"),
    ("systems of one lab (filter)", "/systems?lab=none"),
    ("a system", "/systems/s05000.lab.test"),
    ("my reservations", "/reservations"),
    ("pools", "/pools"),
    ("pool timeline, 100 systems, 7d", "/pools/small?span=7d"),
    ("pool timeline, 10,000, page 100", "/pools/all?span=30d&page=100"),
    ("a system (with its timeline)", "/systems/s00042.lab.test?span=30d"),
    ("queue (50 waiting recipes)", "/queue"),
    ("jobs", "/jobs"),
    ("a job", "/jobs/1"),
    ("a job, 100 systems' verdicts", "/jobs/1?reasons=1&from=5000"),
    ("advance reservations", "/advance-reservations?user=*"),
    ("utilisation, every system, 30d", "/utilisation?period=30d"),
    ("utilisation, a pool, by hour", "/utilisation?pool=small&period=7d&per=hour"),
    ("utilisation CSV", "/utilisation.csv?period=90d"),
]
QUEUED = 50
PASSWORD = "a bench password"


def signed_in(app) -> Client:
    client = Client(app)
    token = re.search(r'name="csrf" value="(\w+)"', client.get("/login").get_data(as_text=True)).group(1)
    response = client.post("/login", data={"username": "alice", "password": PASSWORD, "csrf": token})
    assert response.status_code == 303, response.get_data(as_text=True)[:300]
    return client


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=10_000)
    parser.add_argument("--bookings-per-system", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=10)
    parser.add_argument("--only", help="only the pages whose path contains this text (e.g. /pools)")
    parser.add_argument("--keep", metavar="DIR", help="build the database in DIR and reuse it when run again")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        where = Path(args.keep or tmp)
        where.mkdir(parents=True, exist_ok=True)
        fresh = not (where / "bench.db").exists()
        settings = Settings(data_dir=str(where), database_url=f"sqlite:///{where}/bench.db")
        db = Database(settings.database)
        use_secrets(db, SecretBox(settings))
        upgrade(db)  # a kept database built by an older tree gets the newer migrations
        if fresh:
            began = time.perf_counter()
            populate(db, args.systems, args.bookings_per_system)
            print(f"{args.systems} systems, {args.systems * args.bookings_per_system} bookings inserted in "
                  f"{time.perf_counter() - began:.1f} s (SQLite)")
            with UnitOfWork(db) as uow:
                signin.set_password(uow, settings_now(), "alice", PASSWORD)
                uow.commit()
            add_pools_queue_and_hours(db, settings, args.systems)
        client = signed_in(create_app(settings, db))
        worst = 0.0
        for label, path in PAGES:
            if args.only and args.only not in path:
                continue
            times = []
            for _ in range(args.repeat + 1):
                start = time.perf_counter()
                response = client.get(path)
                times.append((time.perf_counter() - start) * 1000)
                assert response.status_code == 200, (path, response.status_code)
            times = times[1:]  # the first request warms caches (templates, statements)
            p95 = statistics.quantiles(times, n=20)[18] if len(times) >= 20 else max(times)
            worst = max(worst, statistics.median(times))
            print(f"{label:32} {path:32} median {statistics.median(times):8.1f} ms   p95 {p95:8.1f} ms")
        print(f"aim: every page < {AIM_MS:.0f} ms (median): {'met' if worst < AIM_MS else 'NOT met'}")
    return 0


def add_pools_queue_and_hours(db, settings, systems: int) -> None:
    """Pools `all` (every system) and `small` (100), QUEUED jobs waiting for a booked system, and 31 days of
    aggregated utilisation hours (as the worker writes them); times one hour's aggregation by the worker."""
    from datetime import timedelta

    from sqlalchemy import insert

    from lablease.domain.permissions import Actor
    from lablease.jobxml import normalise_job
    from lablease.services.lifecycle import jobs
    from lablease.services.records import utilisation
    from lablease.services.handlers import unit_of_work
    from lablease.store.report_tables import UtilisationHour
    from lablease.store.tables import Pool, PoolSystem

    now = settings_now()
    with db.writer.begin() as conn:
        conn.execute(insert(Pool), [{"id": 1, "name": "all", "created_at": now},
                                    {"id": 2, "name": "small", "created_at": now}])
        conn.execute(insert(PoolSystem), [{"pool_id": 1, "system_id": i} for i in range(1, systems + 1)]
                     + [{"pool_id": 2, "system_id": i} for i in range(1, 101)])
        hour = utilisation.rules.floor_hour(now) - timedelta(days=31)
        rows = []
        while hour < utilisation.rules.floor_hour(now) - timedelta(hours=1):
            for pool_id, count in ((0, systems), (1, systems), (2, 100)):
                rows.append({"pool_id": pool_id, "hour": hour, "systems": count, "recipe": 900.0 * count,
                             "manual": 1200.0 * count, "idle": 1300.0 * count, "broken": 200.0 * count})
            hour += timedelta(hours=1)
        conn.execute(insert(UtilisationHour), rows)
    alice = Actor(2, "alice")  # her jobs: the job page is hers to see
    for n in range(QUEUED):
        with unit_of_work(db, settings) as uow:
            jobs.submit(uow, alice, now, normalise_job({"recipe_sets": [{"recipes": [{"host_requires": {
                "field": "hostname", "op": "=", "value": f"s{n + 1:05d}.lab.test"}}]}]}))
            uow.commit()
    began = time.perf_counter()
    with UnitOfWork(db, settings=settings) as uow:
        utilisation.aggregate(uow, now)
        uow.commit()
    print(f"the worker aggregated the last hour of {systems} systems in {time.perf_counter() - began:.2f} s")


def settings_now():
    from datetime import datetime, timezone

    return datetime.now(timezone.utc)


if __name__ == "__main__":
    sys.exit(main())
