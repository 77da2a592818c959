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
from lablease.services import signin  # noqa: E402
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
]
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
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(data_dir=tmp, database_url=f"sqlite:///{tmp}/bench.db")
        db = Database(settings.database)
        use_secrets(db, SecretBox(settings))
        upgrade(db)
        began = time.perf_counter()
        populate(db, args.systems, args.bookings_per_system)
        print(f"{args.systems} systems, {args.systems * args.bookings_per_system} bookings inserted in "
              f"{time.perf_counter() - began:.1f} s (SQLite)")
        with UnitOfWork(db) as uow:
            signin.set_password(uow, settings_now(), "alice", PASSWORD)
            uow.commit()
        client = signed_in(create_app(settings, db))
        worst = 0.0
        for label, path in PAGES:
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


def settings_now():
    from datetime import datetime, timezone

    return datetime.now(timezone.utc)


if __name__ == "__main__":
    sys.exit(main())
