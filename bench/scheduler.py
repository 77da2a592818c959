"""Per-event scheduling cost as the queue grows, beside a naive full-pass scheduler.

    .venv/bin/python bench/scheduler.py [--systems 10000] [--queues 10000,100000] [--events 200]
                                        [--keep DIR] [--profile FILE]

Builds, on SQLite, 10,000 Automated systems (four arches, mixed memory, two
pools) that are all busy, and a queue of recipes with mixed requirements
(95 % one-host sets, 5 % sets of 2-4 hosts; priorities mixed). Then frees
systems one at a time and measures, per event:

  event-driven   lablease.services.queue.scheduling.on_system_freed: the freed
                 system finds its waiting work through the candidate index
                 (requirement classes), each class's queue is read in order
                 from its own index and merged.
  full pass      what Beaker's scheduler loop did: walk the whole queue in
                 priority order and try every recipe set against the free
                 systems (implemented here as the baseline; a few events only).

--keep DIR builds each lab and queue once into DIR and copies it for every
run (the build takes minutes at 100,000; the same database and seed then
serve a before/after comparison). --profile FILE writes a cProfile of the
event-driven events (CPU time) for each queue size (FILE.<queue>).

Prints p50/p99 per event and placements per second for each queue size; the
figure that matters is how flat the event-driven cost stays when the queue
grows tenfold.
"""
from __future__ import annotations

import argparse
import cProfile
import gc
import os
import pickle
import random
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

from sqlalchemy import insert, select, update  # noqa: E402

from lablease.services.queue import scheduling  # noqa: E402
from lablease.services.handlers import unit_of_work  # noqa: E402
from lablease.store.db import Database  # noqa: E402
from lablease.store.migrate import upgrade  # noqa: E402
from lablease.store.tables import (AccessRule, Booking, Job, Pool, PoolSystem, Recipe, RecipeSet,  # noqa: E402
                                   Reservation, Resource, System, User)

NOW = datetime(2026, 11, 22, 12, tzinfo=timezone.utc)
ARCHES = ("x86_64", "aarch64", "ppc64le", "s390x")


def requirement_specs() -> list[dict]:
    """Mixed host requirements: by arch, arch and memory, pool, or anything."""
    specs = [{}]
    for arch in ARCHES:
        specs.append({"host_requires": {"field": "arch", "op": "=", "value": arch}})
        for memory in (8192, 32768):
            specs.append({"host_requires": {"and": [{"field": "arch", "op": "=", "value": arch},
                                                    {"field": "memory", "op": ">=", "value": memory}]}})
    specs.append({"host_requires": {"field": "pool", "op": "=", "value": "gpu"}})
    specs.append({"autopick": {"random": False, "pools": ["fast"]}})
    return specs


def full_spec(spec: dict) -> dict:
    return {"whiteboard": "", "host_requires": spec.get("host_requires"), "force": None, "distro_requires": None,
            "autopick": spec.get("autopick", {"random": False, "pools": []}), "reservesys": None,
            "runtime_limit": None, "ks_meta": "", "kernel_options": "", "tasks": []}


def build_lab(db: Database, systems: int, rng: random.Random) -> None:
    with db.writer.begin() as conn:
        conn.execute(insert(User), [{"id": 1, "name": "admin", "is_admin": True, "disabled": False, "created_at": NOW},
                                    {"id": 2, "name": "alice", "is_admin": False, "disabled": False,
                                     "created_at": NOW}])
        conn.execute(insert(Pool), [{"id": 1, "name": "gpu", "created_at": NOW}, {"id": 2, "name": "fast",
                                                                                   "created_at": NOW}])
        conn.execute(insert(Resource), [{"id": i, "kind": "system", "name": f"s{i:05d}.lab.test", "capacity": 1}
                                        for i in range(1, systems + 1)])
        conn.execute(insert(System), [{
            "id": i, "resource_id": i, "fqdn": f"s{i:05d}.lab.test", "arch": ARCHES[i % 4],
            "memory_mb": rng.choice((4096, 16384, 65536)), "cpus": 8, "attributes": {}, "condition": "automated",
            "usage": "running", "power": {}, "netboot": {}, "created_at": NOW} for i in range(1, systems + 1)])
        conn.execute(insert(AccessRule), [{"system_id": i, "permission": p} for i in range(1, systems + 1)
                                          for p in ("view", "reserve")])
        conn.execute(insert(PoolSystem), [{"pool_id": 1 if i % 10 == 0 else 2, "system_id": i}
                                          for i in range(1, systems + 1) if i % 10 in (0, 5)])
        # Everything is busy: each system held by an open-ended booking until an event frees it.
        conn.execute(insert(Booking), [{"id": i, "resource_id": i, "start_at": NOW - timedelta(hours=1),
                                        "end_at": None, "quantity": 1, "exclusive": True, "kind": "reservation",
                                        "user_id": 1, "created_at": NOW} for i in range(1, systems + 1)])
        conn.execute(insert(Reservation), [{"id": i, "system_id": i, "user_id": 1, "booking_id": i,
                                            "kind": "manual", "start_at": NOW - timedelta(hours=1),
                                            "end_at": None, "return_loan": False, "created_at": NOW}
                                           for i in range(1, systems + 1)])


def build_queue(db: Database, size: int, classes: list[tuple[int, dict]], rng: random.Random, first_id: int) -> None:
    jobs, sets, recipes = [], [], []
    recipe_id = first_id
    set_id = first_id
    while recipe_id < first_id + size:
        hosts = rng.choice((2, 3, 4)) if rng.random() < 0.05 else 1
        priority = rng.choice((1, 2, 2, 2, 3))
        queued = NOW - timedelta(seconds=size - (recipe_id - first_id))
        jobs.append({"id": set_id, "owner_id": 2, "whiteboard": "", "status": "queued", "result": "none",
                     "submitted_at": queued})
        sets.append({"id": set_id, "job_id": set_id, "priority": priority, "status": "queued", "result": "none",
                     "queued_at": queued, "multi": hosts > 1})
        for _ in range(hosts):
            class_id, spec = rng.choice(classes)
            recipes.append({"id": recipe_id, "recipe_set_id": set_id, "job_id": set_id, "spec": spec,
                            "status": "queued", "result": "none", "class_id": class_id, "priority": priority,
                            "queued_at": queued, "task_results": []})
            recipe_id += 1
        set_id += 1
    with db.writer.begin() as conn:
        for table, rows in ((Job, jobs), (RecipeSet, sets), (Recipe, recipes)):
            for start in range(0, len(rows), 5000):
                conn.execute(insert(table), rows[start:start + 5000])


def make_classes(db: Database) -> list[tuple[int, dict]]:
    classes = []
    with unit_of_work(db) as uow:
        for spec in requirement_specs():
            spec = full_spec(spec)
            classes.append((scheduling.requirement_class(uow, 2, spec, NOW).id, spec))
        uow.commit()
    return classes


def free(db: Database, system_id: int, now: datetime) -> None:
    with db.writer.begin() as conn:
        conn.execute(update(Booking).where(Booking.id == system_id).values(end_at=now))
        conn.execute(update(Reservation).where(Reservation.id == system_id).values(
            end_at=now, returned_at=now, return_reason="returned"))


def started(db: Database) -> int:
    with unit_of_work(db, write=False) as uow:
        return len(uow.session.execute(select(Recipe.id).where(Recipe.status == "running")).all())


def event_driven(db: Database, system_id: int, now: datetime) -> None:
    with unit_of_work(db) as uow:
        scheduling.on_system_freed(uow, system_id, now)
        uow.commit()


def full_pass(db: Database, system_id: int, now: datetime) -> None:
    """Beaker's loop: every queued recipe set, in priority order, tried against the free systems."""
    with unit_of_work(db) as uow:
        session = uow.session
        ids = session.execute(scheduling.queue_order(select(RecipeSet.id).where(
            RecipeSet.status.in_(scheduling.WAITING)))).scalars().all()
        for set_id in ids:
            scheduling.try_start(uow, session.get(RecipeSet, set_id), now)
        uow.commit()


def measure(db: Database, how, events: list[int], now: datetime) -> tuple[list[float], list[float], int, float]:
    """Per event: wall-clock ms and this process's CPU ms (SQLite runs in-process: on a shared machine the CPU
    time is what the event costs, the wall clock adds the time other processes had the cores). Full
    (generation 2) garbage collections that fall inside an event are counted in COLLECTIONS."""
    before = started(db)
    times, cpu = [], []
    begin = time.perf_counter()
    for offset, system_id in enumerate(events):
        moment = now + timedelta(seconds=offset)
        free(db, system_id, moment)
        collected = len(COLLECTIONS)
        t, c = time.perf_counter(), time.process_time()
        how(db, system_id, moment)
        times.append((time.perf_counter() - t) * 1000)
        cpu.append((time.process_time() - c) * 1000)
        for entry in COLLECTIONS[collected:]:
            entry.append(offset)
    return times, cpu, started(db) - before, time.perf_counter() - begin


COLLECTIONS: list[list] = []  # [CPU ms, event index] per full collection while measuring
_COLLECTING = {"since": 0.0}


def _watch_collections(phase: str, info: dict) -> None:
    if info["generation"] != 2:
        return
    if phase == "start":
        _COLLECTING["since"] = time.process_time()
    else:
        COLLECTIONS.append([(time.process_time() - _COLLECTING["since"]) * 1000])


def prepared(args, size: int, workdir: Path) -> tuple[Database, random.Random]:
    """A fresh copy of the lab and queue of this size, and the random state that built them (to draw the
    same events): built here, or copied from --keep's directory (built there the first time)."""
    path = workdir / "sched.db"
    kept = Path(args.keep) / f"sched-{args.systems}-{size}.db" if args.keep else None
    if kept is not None and kept.exists():
        shutil.copyfile(kept, path)
        rng = random.Random()
        rng.setstate(pickle.loads(kept.with_suffix(".rng").read_bytes()))
        print(f"queue {size}: copied {kept}", flush=True)
        db = Database(f"sqlite:///{path}")
        upgrade(db)  # a database kept by an older checkout gets this one's migrations
        return db, rng
    db = Database(f"sqlite:///{path}")
    upgrade(db)
    rng = random.Random(42)
    t = time.perf_counter()
    build_lab(db, args.systems, rng)
    classes = make_classes(db)
    build_queue(db, size, classes, rng, first_id=1)
    print(f"queue {size}: built {args.systems} systems, {len(classes)} requirement classes and the queue "
          f"in {time.perf_counter() - t:.1f} s", flush=True)
    if kept is not None:
        db.dispose()
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, kept)
        kept.with_suffix(".rng").write_bytes(pickle.dumps(rng.getstate()))
        db = Database(f"sqlite:///{path}")
    return db, rng


def pct(times: list[float], q: int) -> float:
    return statistics.quantiles(times, n=100)[q - 1] if len(times) >= 2 else times[0]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--systems", type=int, default=10_000)
    parser.add_argument("--queues", default="10000,100000")
    parser.add_argument("--events", type=int, default=200)
    parser.add_argument("--baseline-events", type=int, default=3)
    parser.add_argument("--keep", metavar="DIR", help="build each database once into DIR and reuse it")
    parser.add_argument("--profile", metavar="FILE", help="cProfile the event-driven events into FILE.<queue>")
    args = parser.parse_args()
    gc.callbacks.append(_watch_collections)
    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; load average before: "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()), flush=True)
    rows = []
    for size in (int(q) for q in args.queues.split(",")):
        workdir = Path(tempfile.mkdtemp(prefix="lablease-bench-sched-"))
        db, rng = prepared(args, size, workdir)
        order = rng.sample(range(1, args.systems + 1), args.events + args.baseline_events)
        gc.collect()  # building or copying the database left garbage: not the first event's to collect
        gc.freeze()  # and what is left lives on, as the worker's start-up objects do (cli/server.py freezes them)
        profile = cProfile.Profile(time.process_time) if args.profile else None
        COLLECTIONS.clear()
        if profile:
            profile.enable()
        times, cpu, placed, elapsed = measure(db, event_driven, order[:args.events], NOW)
        if profile:
            profile.disable()
            profile.dump_stats(f"{args.profile}.{size}")
        collections = [entry for entry in COLLECTIONS if len(entry) == 2]
        print(f"queue {size}: {len(collections)} full garbage collection(s) inside the events: "
              + ", ".join(f"{ms:.1f} ms CPU in event {index}" for ms, index in collections), flush=True)
        if collections:  # what the events cost without the process-wide pauses (the figures above keep them)
            hit = {index for _, index in collections}
            rest = [c for index, c in enumerate(cpu) if index not in hit]
            print(f"queue {size}: the other {len(rest)} events: CPU p50 {statistics.median(rest):.2f} ms, "
                  f"p99 {pct(rest, 99):.2f} ms", flush=True)
        rows.append((size, "event-driven", times, cpu, placed, elapsed))
        if args.baseline_events:  # 0: the event-driven figures only (a full pass at 100,000 takes minutes)
            base, base_cpu, base_placed, base_elapsed = measure(db, full_pass, order[args.events:],
                                                                NOW + timedelta(hours=1))
            rows.append((size, "full pass", base, base_cpu, base_placed, base_elapsed))
        db.dispose()
        shutil.rmtree(workdir)
        print(f"queue {size}: measured; load average " + " ".join(f"{x:.2f}" for x in os.getloadavg()), flush=True)
    print(f"\n{'queue':>8}  {'scheduler':<13} {'events':>6} {'p50 ms':>9} {'p99 ms':>9} {'CPU p50':>9} "
          f"{'CPU p99':>9} {'placed':>7} {'placed/s':>9}")
    for size, name, times, cpu, placed, elapsed in rows:
        print(f"{size:>8}  {name:<13} {len(times):>6} {statistics.median(times):>9.2f} {pct(times, 99):>9.2f} "
              f"{statistics.median(cpu):>9.2f} {pct(cpu, 99):>9.2f} {placed:>7} {placed / elapsed:>9.1f}")
    for label, column in (("p50", 2), ("p99", 2), ("CPU p50", 3), ("CPU p99", 3)):
        driven = {row[0]: (statistics.median if label.endswith("p50") else lambda t: pct(t, 99))(row[column])
                  for row in rows if row[1] == "event-driven"}
        if len(driven) == 2:
            small, large = sorted(driven)
            print(f"event-driven {label} grows {driven[large] / driven[small]:.2f}x while the queue grows "
                  f"{large // small}x")
    print("load average after: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
