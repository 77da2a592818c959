"""Extend, heartbeat and return over HTTP, and what authentication costs — run by bench/reserve.py.

Against the real server bench/reserve.py started (its 16 Manual systems rNN.bench.test, the admin's
token, wrk's 16 connections), `run` measures:

  heartbeat  POST /api/v1/reservations/{id}/heartbeat over 16 reservations made with a heartbeat
  extend     PATCH /api/v1/reservations/{id} {"extend_by": "60s"} over 16 reservations (one per system,
             nothing booked after them, so every extension fits)
  return     DELETE /api/v1/reservations/{id}, each request a reservation of its own (not begun yet:
             its booking is dropped), from a pool bulk-inserted beforehand

and `authentication` times services.people.users.authenticate in-process: one indexed statement against a
cached token (services/people/token_cache.py). Heartbeat is compared with `hello` (GET /health): aim >= 0.5.
"""
from __future__ import annotations

import textwrap
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path


OPS = ("heartbeat", "extend", "return")
RETURN_POOL = 20_000  # more than one run returns at the rates seen (a missing id would count as non-2xx)

LUA = textwrap.dedent("""
    -- args: first id, ids in the pool (16), threads, operation, path, token
    local threads = 0
    function setup(thread)
      thread:set("tid", threads)
      threads = threads + 1
    end
    function init(args)
      first, count, nthreads, op, path = tonumber(args[1]), tonumber(args[2]), tonumber(args[3]), args[4], args[5]
      headers = {["Content-Type"] = "application/json", ["Authorization"] = "Bearer " .. args[6]}
      counter = 0
    end
    function request()
      counter = counter + 1
      local slot = counter * nthreads + tid
      if op == "return" then  -- every reservation once
        return wrk.format("DELETE", path .. "/" .. (first + slot), headers)
      end
      local id = first + slot % count
      if op == "heartbeat" then
        return wrk.format("POST", path .. "/" .. id .. "/heartbeat", headers, "")
      end
      return wrk.format("PATCH", path .. "/" .. id, headers, '{"extend_by": "60s"}')
    end
""")


def _contiguous(ids: list[int]) -> int:
    """wrk addresses the reservations by first id and offset."""
    ids = sorted(ids)
    assert ids == list(range(ids[0], ids[0] + len(ids))), "the bench's reservations must have consecutive ids"
    return ids[0]


def _insert(database_url: str, start: datetime, count: int, heartbeat: int | None = None) -> int:
    """`count` reservations of the admin's, 60 s each, 2 minutes apart per system over the 16 systems round
    robin, inserted in bulk (consecutive ids, which the API's own reserves during a run would not give)."""
    from sqlalchemy import insert, select  # here: gunicorn imports reserve.py, so this file, for the minimal app
    from sqlalchemy.orm import Session

    from lablease.store.db import Database
    from lablease.store.tables import Booking, Reservation, System, User

    db = Database(database_url)
    try:
        with Session(db.writer) as session:
            admin = session.execute(select(User.id).where(User.name == "admin")).scalar_one()
            systems = session.execute(select(System.id, System.resource_id).where(
                System.fqdn.like("r%.bench.test")).order_by(System.fqdn)).all()
            windows = [(systems[i % 16], start + timedelta(minutes=2 * (i // 16))) for i in range(count)]
            bookings = session.execute(insert(Booking).returning(Booking.id, sort_by_parameter_order=True), [
                dict(resource_id=s.resource_id, start_at=at, end_at=at + timedelta(seconds=60), quantity=1,
                     exclusive=True, kind="reservation", user_id=admin, created_at=start) for s, at in windows]
            ).scalars().all()
            made = session.execute(insert(Reservation).returning(Reservation.id, sort_by_parameter_order=True), [
                dict(system_id=s.id, user_id=admin, booking_id=b, kind="manual", start_at=at,
                     end_at=at + timedelta(seconds=60), return_loan=False, heartbeat_seconds=heartbeat,
                     last_heartbeat_at=at if heartbeat else None, due_at=at + timedelta(seconds=60),
                     created_at=start) for (s, at), b in zip(windows, bookings)]).scalars().all()
            session.commit()
    finally:
        db.dispose()
    return _contiguous(made)


def run(load, url: str, database_url: str, token: str, seconds: float, workdir: Path) -> dict:
    """The three rates against a running server; needs wrk (its output is parsed as reserve.py's)."""
    if not hasattr(load, "script"):
        print("lease operations: skipped (they need wrk)")
        return {}
    far = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(days=200)
    first = {"heartbeat": _insert(database_url, far + timedelta(days=100), 16, heartbeat=600),
             "extend": _insert(database_url, far + timedelta(days=200), 16),  # nothing after them: all fit
             "return": _insert(database_url, far, RETURN_POOL)}
    script, load.script = load.script, workdir / "lease_ops.lua"
    load.script.write_text(LUA)
    results = {}
    try:
        load.run(url, "/api/v1/reservations", 1, token=token, post=True, base=first["heartbeat"], prefix="heartbeat")
        for op in OPS:
            with Sessions(database_url) as sessions:
                results[op] = load.run(url, "/api/v1/reservations", seconds, token=token, post=True,
                                       base=first[op], prefix=op)
            results[op]["sessions"] = sessions.counts
    finally:
        load.script = script
    return results


class Sessions(threading.Thread):
    """PostgreSQL: the states of the server's connections (pg_stat_activity), sampled every 10 ms during a run,
    to see whether a transaction sits `idle in transaction` while Python works."""

    def __init__(self, database_url: str):
        super().__init__(daemon=True)
        self.url = database_url.replace("postgresql+psycopg://", "postgresql://")
        self.counts: dict[str, int] = {}
        self.stop = threading.Event()

    def __enter__(self):
        if self.url.startswith("postgresql://"):
            self.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        if self.is_alive():
            self.join(5)

    def run(self):
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self.stop.wait(0.01):
                for (state,) in conn.execute("SELECT state FROM pg_stat_activity WHERE datname = current_database()"
                                             " AND backend_type = 'client backend' AND pid <> pg_backend_pid()"):
                    self.counts[state] = self.counts.get(state, 0) + 1


def authentication(database_url: str, token: str, repeat: int = 2000) -> dict:
    """Microseconds per authenticate() in-process, each in a reading unit of work of its own: read vs cached."""
    from lablease.services.people.token_cache import TokenCache
    from lablease.services.people.users import authenticate
    from lablease.store.db import Database
    from lablease.store.uow import UnitOfWork

    db = Database(database_url)
    header, now = f"Bearer {token}", datetime.now(timezone.utc)
    cache = TokenCache(timedelta(seconds=5), Path("/nonexistent/stamp"))
    timings = {}
    try:
        for name, used in (("one statement", None), ("cached", cache)):
            with UnitOfWork(db, write=False) as uow:
                authenticate(uow, header, now, used)  # warm: compiled statement, cache entry
            began = time.perf_counter()
            for _ in range(repeat):
                with UnitOfWork(db, write=False) as uow:
                    authenticate(uow, header, now, used)
            timings[name] = (time.perf_counter() - began) / repeat * 1e6
    finally:
        db.dispose()
    return timings


def report(table: dict) -> None:
    """The rates beside hello, and the heartbeat aim."""
    print(f"{'database':<11} {'operation':<10} {'req/s':>8} {'p50 ms':>8} {'p99 ms':>8} {'requests':>9} {'non-2xx':>8} "
          f"{'CPU ms/req':>10}")
    for kind, results in table.items():
        for op in OPS:
            if op in results:
                r = results[op]
                print(f"{kind:<11} {op:<10} {r['rps']:>8.0f} {r['p50']:>8.2f} {r['p99']:>8.2f} {r['requests']:>9} "
                      f"{r['errors']:>8} {r.get('cpu_ms', float('nan')):>10.2f}")
    for kind, results in table.items():
        if "heartbeat" in results:
            ratio = results["heartbeat"]["rps"] / results["hello"]["rps"]
            cpu = results["hello"].get("cpu_ms", 0) / results["heartbeat"].get("cpu_ms", 1)
            print(f"{kind}: heartbeat / hello = {ratio:.2f} ({'meets' if ratio >= 0.5 else 'misses'} the 0.5 aim); "
                  f"server CPU per request: hello / heartbeat = {cpu:.2f}")
        for op in OPS:
            counts = results.get(op, {}).get("sessions")
            if counts:
                busy = sum(n for state, n in counts.items() if state != "idle")
                print(f"{kind}: {op}: server connections sampled busy {busy} times: "
                      + ", ".join(f"{state} {100 * n / busy:.0f} %" for state, n in sorted(counts.items())
                                  if state != "idle"))
        if "authentication" in results:
            timing = results["authentication"]
            print(f"{kind}: authenticate in-process: " + ", ".join(f"{k} {v:.0f} µs" for k, v in timing.items()))
