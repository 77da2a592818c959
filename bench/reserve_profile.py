"""Where one reserve's time goes: cProfile over the WSGI application in-process (no HTTP, no gunicorn).

    .venv/bin/python bench/reserve_profile.py [--reserves 400] [--postgresql] [--top 25]

Makes a fresh migrated database (SQLite, or a throwaway PostgreSQL), a user
and 16 Manual systems, then sends --reserves `POST /api/v1/reservations`
through `werkzeug.test.Client` (each its own window, so none conflicts; every
answer must be 201) and prints the CPU time and SQL statements per reserve;
then as many again under cProfile (CPU time), and prints the functions with the
most cumulative and own time.
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

from sqlalchemy import event
from werkzeug.test import Client

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lablease.api import create_app  # noqa: E402
from lablease.config import Settings  # noqa: E402
from lablease.services.people import users  # noqa: E402
from lablease.store.db import Database  # noqa: E402
from lablease.store.migrate import upgrade  # noqa: E402
from lablease.store.uow import UnitOfWork  # noqa: E402
from tests.support.postgres import ThrowawayPostgres  # noqa: E402

SYSTEMS = 16


def at(moment: datetime) -> str:
    return moment.isoformat().replace("+00:00", "Z")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reserves", type=int, default=400)
    parser.add_argument("--postgresql", action="store_true")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="lablease-profile-"))
    postgres = ThrowawayPostgres().start() if args.postgresql else None
    try:
        url = postgres.create_database("profile") if postgres else f"sqlite:///{workdir / 'lablease.db'}"
        db = Database(url)
        upgrade(db)
        settings = Settings(data_dir=str(workdir / "data"))
        app = create_app(settings, db)
        now = datetime.now(timezone.utc)
        with UnitOfWork(db) as uow:
            _, token = users.add_user(uow, now, "admin", True)
            uow.commit()
        client, headers = Client(app), {"Authorization": f"Bearer {token}"}
        for i in range(SYSTEMS):
            made = client.post("/api/v1/systems", headers=headers,
                               json={"fqdn": f"r{i:02d}.bench.test", "arch": "x86_64", "condition": "manual"})
            assert made.status_code == 201, made.get_json()
        statements = [0]
        event.listen(db.writer, "before_cursor_execute", lambda *a: statements.__setitem__(0, statements[0] + 1))
        if db.reader is not db.writer:
            event.listen(db.reader, "before_cursor_execute", lambda *a: statements.__setitem__(0, statements[0] + 1))
        base = now + timedelta(days=1)

        def reserve(n: int) -> None:
            start = base + timedelta(minutes=n)
            answer = client.post("/api/v1/reservations", headers=headers,
                                 json={"system": f"r{n % SYSTEMS:02d}.bench.test", "start": at(start),
                                       "end": at(start + timedelta(seconds=60))})
            assert answer.status_code == 201, answer.get_json()

        for n in range(50):  # warm up: statement caches, imports
            reserve(n)
        statements[0] = 0
        began_cpu = time.process_time()
        for n in range(50, 50 + args.reserves):
            reserve(n)
        cpu = time.process_time() - began_cpu
        print(f"{'postgresql' if postgres else 'sqlite'}: {args.reserves} reserves in-process: "
              f"{cpu / args.reserves * 1000:.2f} ms CPU each (this process; PostgreSQL's own CPU not counted), "
              f"{statements[0] / args.reserves:.1f} SQL statements each; load average "
              + " ".join(f"{x:.2f}" for x in os.getloadavg()))
        profile = cProfile.Profile(time.process_time)  # CPU time: the machine may be shared
        began_cpu = time.process_time()
        profile.enable()
        for n in range(50 + args.reserves, 50 + 2 * args.reserves):
            reserve(n)
        profile.disable()
        cpu = time.process_time() - began_cpu
        print(f"under the profiler: {cpu / args.reserves * 1000:.2f} ms CPU each")
        stats = pstats.Stats(profile)
        stats.sort_stats("cumulative").print_stats(args.top)
        stats.sort_stats("tottime").print_stats(args.top)
        stats.sort_stats("cumulative").print_callees(r"app.py:\d+\(run\)|reserve.py:\d+\(reserve\)")
        db.dispose()
    finally:
        if postgres:
            postgres.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
