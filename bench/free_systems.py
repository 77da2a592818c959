"""Which systems are free in [T1, T2)" and "is system X free in [T1, T2)" over a big calendar.

    .venv/bin/python bench/free_systems.py [--systems 10000] [--bookings-per-system 100] [--repeat 20]

On SQLite and on PostgreSQL (a throwaway server from tests/support/postgres.py)
it builds the migrated schema (lablease.store.migrate), bulk-inserts systems
and non-overlapping bookings straight into it (no HTTP), runs ANALYZE, and
times, with medians and p95 over repetitions:

  server query   the query lablease.services.catalog.systems.list_systems builds for
                 free_from/free_until (its NOT EXISTS over bookings), ids only
  list_systems   the whole service call with those filters (ORM objects,
                 access check, current reservations and loans, dicts), every
                 free system in one call (the unpaged list, as before paging)
  page 1 (HTTP)  GET /api/v1/systems?free_from=..&free_until=..&limit=100
                 through the WSGI application in-process (authentication,
                 routing, JSON: all the server does for one request), the
                 first page
  every page     the same, following each Link rel="next" to the end: the
                 time of each page; the walk must return each free system
                 exactly once, in order (asserted, and printed)
  latest-before  the "last booking before T2 ends after T1" shape of the same
                 question (one index probe per system), for comparison
  is X free      lablease.store.calendar.latest_before + the domain rule
                 (lablease.domain.calendar.exclusive_conflict), random systems
  covering: ...  the two queries again after adding, in the bench database
                 only, an index the latest-before probe can answer alone
                 (SQLite (resource_id, start_at, end_at); PostgreSQL
                 (resource_id, start_at) INCLUDE (end_at), then VACUUM)
  range GiST     PostgreSQL only: a GiST on tstzrange(start_at, end_at) and
                 the NOT EXISTS written with && so that it can use it

Aims: "which are free" < 50 ms, a page of them < 50 ms, "is X free" < 1 ms.
"""
from __future__ import annotations

import argparse
import os
import re
import random
import shutil
import statistics
import sys
import tempfile
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqlalchemy import insert, select, text  # noqa: E402

from werkzeug.test import Client  # noqa: E402

from lablease.api import create_app  # noqa: E402
from lablease.config import Settings  # noqa: E402
from lablease.domain.calendar import Booking as DomainBooking  # noqa: E402
from lablease.domain.calendar import exclusive_conflict  # noqa: E402
from lablease.domain.paging import PageRequest  # noqa: E402
from lablease.domain.permissions import Actor  # noqa: E402
from lablease.domain.windows import Window  # noqa: E402
from lablease.services.catalog import systems as system_service  # noqa: E402
from lablease.services.people import users  # noqa: E402
from lablease.store import calendar  # noqa: E402
from lablease.store.db import Database  # noqa: E402
from lablease.store.migrate import upgrade  # noqa: E402
from lablease.store.tables import AccessRule, Resource, System, User  # noqa: E402
from lablease.store.uow import UnitOfWork  # noqa: E402
from tests.support.postgres import ThrowawayPostgres  # noqa: E402

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
# The question asked: a 4-hour window in the middle of the booked period.
T1 = T0 + timedelta(days=120, hours=9)
T2 = T1 + timedelta(hours=4)
AIM_LIST_MS, AIM_ONE_MS = 50.0, 1.0


def make_bookings(systems: int, per_system: int, seed: int = 7):
    """(resource_id, start, end) rows: per system, back-to-back-ish bookings of 1-48 h with gaps of 0-72 h."""
    rng = random.Random(seed)
    for resource_id in range(1, systems + 1):
        at = T0 + timedelta(hours=rng.randint(0, 48))
        for _ in range(per_system):
            end = at + timedelta(hours=rng.randint(1, 48))
            yield resource_id, at, end
            at = end + timedelta(hours=rng.randint(0, 72))


def populate(db: Database, systems: int, per_system: int) -> tuple[int, int]:
    """Systems and bookings straight into the migrated schema; returns (admin id, user id)."""
    now = datetime.now(timezone.utc)
    with db.writer.begin() as conn:
        conn.execute(insert(User), [
            # ids from the table's sequence (1 and 2 on the fresh database), so later users get the next ones
            {"name": "admin", "is_admin": True, "disabled": False, "created_at": now},
            {"name": "alice", "is_admin": False, "disabled": False, "created_at": now},
        ])
        conn.execute(insert(Resource), [{"id": i, "kind": "system", "name": f"s{i:05d}.lab.test", "capacity": 1}
                                        for i in range(1, systems + 1)])
        conn.execute(insert(System), [
            {"id": i, "resource_id": i, "fqdn": f"s{i:05d}.lab.test", "arch": "x86_64", "condition": "manual",
             "usage": "idle", "attributes": {}, "power": {}, "netboot": {}, "created_at": now}
            for i in range(1, systems + 1)])
        conn.execute(insert(AccessRule), [{"system_id": i, "permission": p} for i in range(1, systems + 1)
                                          for p in ("view", "reserve")])
    rows = make_bookings(systems, per_system)
    if db.is_postgresql:
        _copy_bookings_postgresql(db, rows, now)
    else:
        _insert_bookings_sqlite(db, rows, now)
    with db.writer.begin() as conn:
        conn.execute(text("ANALYZE"))
    return 1, 2


def _insert_bookings_sqlite(db: Database, rows, now: datetime) -> None:
    # The text format SQLAlchemy's SQLite DateTime (UTCDateTime) writes: naive UTC with microseconds.
    def fmt(moment: datetime) -> str:
        return moment.astimezone(timezone.utc).replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")

    created = fmt(now)
    raw = db.writer.raw_connection()
    try:
        cursor = raw.cursor()
        cursor.executemany(
            "INSERT INTO bookings (resource_id, start_at, end_at, quantity, exclusive, kind, user_id, created_at) "
            "VALUES (?, ?, ?, 1, 1, 'reservation', 2, ?)",
            ((r, fmt(s), fmt(e), created) for r, s, e in rows))
        raw.commit()
    finally:
        raw.close()


def _copy_bookings_postgresql(db: Database, rows, now: datetime) -> None:
    raw = db.writer.raw_connection()
    try:
        cursor = raw.cursor()
        columns = "resource_id, start_at, end_at, quantity, exclusive, kind, user_id, created_at"
        with cursor.copy(f"COPY bookings ({columns}) FROM STDIN") as copy:
            for resource_id, start, end in rows:
                copy.write_row((resource_id, start, end, 1, True, "reservation", 2, now))
        raw.commit()
    finally:
        raw.close()


def timed(function, repeat: int) -> tuple[list[float], object]:
    times, result = [], None
    for _ in range(repeat):
        began = time.perf_counter()
        result = function()
        times.append((time.perf_counter() - began) * 1000)
    return times, result


def summary(times: list[float]) -> str:
    p95 = statistics.quantiles(times, n=20)[18] if len(times) >= 20 else max(times)
    return f"median {statistics.median(times):9.3f} ms   p95 {p95:9.3f} ms"


def server_query_ids(db: Database):
    query = select(System.id).where(~calendar.booked_during(Window(T1, T2), System.resource_id, db.dialect))
    with UnitOfWork(db, write=False) as uow:
        return set(uow.session.execute(query).scalars())


LATEST_BEFORE = """
SELECT s.id FROM systems s
WHERE NOT coalesce((SELECT b.end_at IS NULL OR b.end_at > :t1 FROM bookings b
                    WHERE b.resource_id = s.resource_id AND b.start_at < :t2
                    ORDER BY b.start_at DESC LIMIT 1), false)
"""


def latest_before_ids(db: Database):
    # Bind through the store's own type so SQLite compares the same text format.
    from sqlalchemy import bindparam

    from lablease.store.types import UTCDateTime

    statement = text(LATEST_BEFORE).bindparams(bindparam("t1", type_=UTCDateTime), bindparam("t2", type_=UTCDateTime))
    with UnitOfWork(db, write=False) as uow:
        return set(uow.session.execute(statement, {"t1": T1, "t2": T2}).scalars())


RANGE_OVERLAP = """
SELECT s.id FROM systems s
WHERE NOT EXISTS (SELECT 1 FROM bookings b WHERE b.resource_id = s.resource_id
                  AND tstzrange(b.start_at, b.end_at) && tstzrange(:t1, :t2))
"""


def range_overlap_ids(db: Database):
    with UnitOfWork(db, write=False) as uow:
        return set(uow.session.execute(text(RANGE_OVERLAP), {"t1": T1, "t2": T2}).scalars())


def list_free(db: Database, actor: Actor, systems: int):
    """Every free system in one call: one page as long as the whole list (what the service did before paging)."""
    with UnitOfWork(db, write=False) as uow:
        return system_service.list_systems(uow, actor, T0, {"free_from": T1, "free_until": T2},
                                           PageRequest(limit=systems + 1)).items


class Pager:
    """GET /api/v1/systems for the free window through the WSGI app in-process, page by page."""

    FIRST = f"/api/v1/systems?free_from={T1:%Y-%m-%dT%H:%M:%SZ}&free_until={T2:%Y-%m-%dT%H:%M:%SZ}&limit=100"

    def __init__(self, db: Database, data_dir: Path):
        with UnitOfWork(db) as uow:
            _, token = users.add_user(uow, datetime.now(timezone.utc), "pager", False)
            uow.commit()
        self.client = Client(create_app(Settings(data_dir=str(data_dir)), db))
        self.headers = {"Authorization": f"Bearer {token}"}

    def page(self, url: str) -> tuple[list, str | None]:
        response = self.client.get(url, headers=self.headers)
        assert response.status_code == 200, response.get_data(as_text=True)
        following = re.fullmatch(r'<([^>]+)>; rel="next"', response.headers.get("Link", ""))
        return response.get_json(), following.group(1) if following else None

    def first(self) -> list:
        return self.page(self.FIRST)[0]

    def walk(self) -> tuple[list[float], list[str]]:
        """(each page's time in ms, every fqdn in the order the pages gave them)."""
        times, fqdns, url = [], [], self.FIRST
        while url:
            began = time.perf_counter()
            body, url = self.page(url)
            times.append((time.perf_counter() - began) * 1000)
            fqdns += [system["fqdn"] for system in body]
        return times, fqdns


def is_free_checker(db: Database, systems: int, rng: random.Random):
    """One call = one question about a random system, on a session held open like a request's."""
    uow = UnitOfWork(db, write=False).__enter__()

    def is_free() -> bool:
        resource_id = rng.randint(1, systems)
        candidate = calendar.latest_before(uow.session, resource_id, T2)
        booking = DomainBooking(candidate.id, Window(candidate.start_at, candidate.end_at)) if candidate else None
        return exclusive_conflict(booking, Window(T1, T2)) is None

    return uow, is_free


def bench(kind: str, url: str, args) -> dict:
    db = Database(url)
    try:
        upgrade(db)
        began = time.perf_counter()
        _, user_id = populate(db, args.systems, args.bookings_per_system)
        print(f"{kind}: inserted {args.systems} systems and {args.systems * args.bookings_per_system} bookings "
              f"in {time.perf_counter() - began:.0f} s", flush=True)
        actor = Actor(user_id, "alice")
        results = {}
        server_query_ids(db)  # warm the caches once
        results["server query"], free_ids = timed(lambda: server_query_ids(db), args.repeat)
        results["latest-before"], other_ids = timed(lambda: latest_before_ids(db), args.repeat)
        assert free_ids == other_ids, "the two query shapes disagree"
        results["list_systems"], listed = timed(lambda: list_free(db, actor, args.systems), max(3, args.repeat // 4))
        free_fqdns = sorted(f"s{i:05d}.lab.test" for i in free_ids)
        assert sorted(s["fqdn"] for s in listed) == free_fqdns
        pager = Pager(db, args.workdir / kind)
        pager.first()  # warm
        results["page 1 (HTTP)"], first = timed(pager.first, args.repeat)
        assert [s["fqdn"] for s in first] == free_fqdns[:100]
        results["every page (HTTP)"], walked = pager.walk()
        assert walked == free_fqdns, "following every next link must give each free system exactly once, in order"
        results["walk"] = f"{len(results['every page (HTTP)'])} pages, {len(walked)} systems, each exactly once"
        uow, is_free = is_free_checker(db, args.systems, random.Random(1))
        try:
            timed(is_free, 100)
            results["is X free"], _ = timed(is_free, args.repeat * 50)
        finally:
            uow.__exit__(None, None, None)
        results["free"] = len(free_ids)
        # What would meet the aim: an index that answers the latest-before probe on its own.
        with db.writer.begin() as conn:
            if db.is_postgresql:
                conn.execute(text("CREATE INDEX bench_cover ON bookings (resource_id, start_at) INCLUDE (end_at)"))
            else:
                conn.execute(text("CREATE INDEX bench_cover ON bookings (resource_id, start_at, end_at)"))
                conn.execute(text("ANALYZE"))
        if db.is_postgresql:  # index-only scans need the visibility map
            with db.writer.connect() as conn:
                conn.execution_options(isolation_level="AUTOCOMMIT").execute(text("VACUUM ANALYZE bookings"))
        results["covering: latest-before"], covered_ids = timed(lambda: latest_before_ids(db), args.repeat)
        results["covering: server query"], _ = timed(lambda: server_query_ids(db), args.repeat)
        assert covered_ids == free_ids
        if db.is_postgresql:  # STACK.md's fastest shape: a range-only GiST and an && anti-join
            with db.writer.begin() as conn:
                conn.execute(text("CREATE INDEX bench_range ON bookings USING gist (tstzrange(start_at, end_at))"))
                conn.execute(text("ANALYZE bookings"))
            results["range GiST: && query"], range_ids = timed(lambda: range_overlap_ids(db), args.repeat)
            assert range_ids == free_ids
        return results
    finally:
        db.dispose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--systems", type=int, default=10_000)
    parser.add_argument("--bookings-per-system", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()

    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; load average before: "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()), flush=True)
    workdir = Path(tempfile.mkdtemp(prefix="lablease-bench-free-"))
    args.workdir = workdir
    postgres = ThrowawayPostgres().start()
    table = {}
    try:
        table["sqlite"] = bench("sqlite", f"sqlite:///{workdir / 'free.db'}", args)
        table["postgresql"] = bench("postgresql", postgres.create_database("free"), args)
    finally:
        postgres.stop()
        shutil.rmtree(workdir, ignore_errors=True)

    print(f"\nwindow [{T1:%Y-%m-%d %H:%M}, {T2:%Y-%m-%d %H:%M}) UTC; {args.systems} systems, "
          f"{args.systems * args.bookings_per_system} bookings")
    for kind, results in table.items():
        print(f"\n{kind}: {results['free']} of {args.systems} systems free in the window; paged: {results['walk']}")
        for case, aim in (("server query", AIM_LIST_MS), ("latest-before", AIM_LIST_MS), ("list_systems", AIM_LIST_MS),
                          ("page 1 (HTTP)", AIM_LIST_MS), ("every page (HTTP)", AIM_LIST_MS),
                          ("is X free", AIM_ONE_MS), ("covering: server query", AIM_LIST_MS),
                          ("covering: latest-before", AIM_LIST_MS), ("range GiST: && query", AIM_LIST_MS)):
            if case not in results:
                continue
            times = results[case]
            median = statistics.median(times)
            verdict = "meets" if median < aim else f"misses by {median / aim:.1f}x"
            print(f"  {case:<24} {summary(times)}   ({len(times)} runs; aim < {aim:g} ms: {verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
