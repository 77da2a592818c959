"""A day of mixed load, for a set time, on SQLite and PostgreSQL: does anything grow or slow down?

    .venv/bin/python bench/soak.py [--minutes 30] [--database sqlite|postgresql|both] [--scale 1]

A real `lablease-server serve` (gunicorn's default gevent worker class, 2 request workers, and the lablease
worker) per database (PostgreSQL: a throwaway server from tests/support/postgres.py), under, all at once:

  people     reserve a system of their own, extend it, return it (one step a second each)
  expiring   short reservations left to run out: the worker returns them, then the next is made;
             lateness = returned_at - end
  heartbeat  CI jobs, each holding a reservation with a 90 s heartbeat, renewed every 30 s (500 at --scale 1)
  harness    jobs submitted (one recipe, no distro: it runs at once on a free automated system) and
             finished through the API (PATCH /recipes/ID completed), as tests/e2e/test_jobs_e2e.py does
  advance    advance reservations made 30 s ahead for 20 s, started and ended by the worker, then the next
  reader     lists (systems, reservations, queue) and the web pages of systems and reservations
  webhooks   every person's notices (their expired reservations) go to a receiver on loopback

Printed every minute: requests per second and p50/p99 (ms) per operation, errors (anything but the answer
the step expects), each server process's resident memory (MB) and open file descriptors (from /proc),
the database's size, the outbox backlog (messages waiting), webhooks received, expiry lateness p99.
At the end, the aims over the run: 0 errors; resident memory growth <= 10 % after the warm-up (the first
5 minutes; --warmup to change it); each operation's p99 <= 2x its warm-up value; expiry lateness p99 < 2 s;
outbox backlog bounded (its last minute no higher than the most seen in the warm-up, plus 50).
"""
from __future__ import annotations

import argparse
import collections
import itertools
import os
import sys
import tempfile
import threading
import time
import uuid
from datetime import datetime, timedelta, timezone
from pathlib import Path

import requests
from sqlalchemy import text

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lablease.cli.client_http import once_more  # noqa: E402
from lablease.services.reads.monitoring import snapshot  # noqa: E402
from lablease.services.people import users  # noqa: E402
from lablease.services.handlers import unit_of_work  # noqa: E402
from lablease.config import Settings  # noqa: E402
from lablease.store.db import Database  # noqa: E402
from tests.e2e.test_webhook_delivery_e2e import Hook  # noqa: E402 - the webhooks' loopback receiver
from tests.support.live import LiveServer  # noqa: E402
from tests.support.postgres import ThrowawayPostgres  # noqa: E402

PEOPLE, EXPIRING, HARNESS, ADVANCE, READERS = 8, 4, 4, 2, 2
HEARTBEAT_JOBS = 500  # at --scale 1
HEARTBEAT_EVERY = 30.0  # seconds between two heartbeats of one job
HEARTBEATERS = 8  # client threads sharing the heartbeats


class Stats:
    """Latencies and errors per operation, for the minute going on, and every minute's summary."""

    def __init__(self):
        self.lock = threading.Lock()
        self.latencies: dict[str, list[float]] = collections.defaultdict(list)
        self.errors: collections.Counter = collections.Counter()
        self.error_samples: list[str] = []

    def timed(self, op: str, call, expect: tuple[int, ...] = (200, 201, 204)):
        """Run one request; its answer, or None when it failed (counted as an error of `op`)."""
        started = time.monotonic()
        try:
            answer = call()
        except requests.RequestException as error:
            answer, problem = None, f"{op}: {error!r}"
        else:
            problem = None if answer.status_code in expect else f"{op}: {answer.status_code} {answer.text[:200]}"
        with self.lock:
            self.latencies[op].append(time.monotonic() - started)
        if problem:
            self.error(op, problem)
        return None if problem else answer

    def error(self, op: str, problem: str) -> None:
        with self.lock:
            self.errors[op] += 1
            if len(self.error_samples) < 20:
                self.error_samples.append(problem)

    def take(self) -> tuple[dict, collections.Counter]:
        with self.lock:
            taken = (dict(self.latencies), self.errors)
            self.latencies, self.errors = collections.defaultdict(list), collections.Counter()
        return taken


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))] if ordered else 0.0


def rfc3339(moment: datetime) -> str:
    return moment.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


class KeyedSession(requests.Session):
    """A session whose every POST but a heartbeat (the same however often it arrives) carries an Idempotency-Key
    of its own (docs/api.md, "Retrying a write")."""

    def request(self, method, url, *args, **kwargs):
        if method.upper() == "POST" and not url.endswith("/heartbeat"):
            kwargs["headers"] = {"Idempotency-Key": uuid.uuid4().hex, **(kwargs.get("headers") or {})}
        return super().request(method, url, *args, **kwargs)


class Soak:
    """One server on one database and the actors loading it."""

    def __init__(self, name: str, database_url: str, workdir: Path, scale: float, out=print,
                 people: int = PEOPLE, expiring: int = EXPIRING):
        self.name, self.database_url, self.out = name, database_url, out
        self.npeople, self.nexpiring = people, expiring
        self.jobs = max(1, round(HEARTBEAT_JOBS * scale))
        self.stats = Stats()
        self.done = threading.Event()
        self.receiver, self.webhooks_seen = Hook(), 0
        self.server = LiveServer(workdir / "data", database_url, settings={
            "webhook_allowed_networks": "127.0.0.1/32"}).start()
        self.db = Database(database_url)
        self.settings = Settings(database_url=database_url, data_dir=str(self.server.data_dir))
        self.minutes: list[dict] = []
        self.sessions: list[requests.Session] = []
        try:
            self._add_systems(workdir)
            self.people = [self._session(token) for token in self._add_people(people + expiring)]
            for session in self.people:  # every person's notices go to the receiver
                session.patch(self.api("/me"), json={"webhook_url": self.receiver.url}, timeout=30).raise_for_status()
        except BaseException:
            self.close()
            raise
        self.admin = self._session(self.server.tokens["admin"])

    # --- set-up -----------------------------------------------------------------------------------

    def _add_systems(self, workdir: Path) -> None:
        rows = [(f"p{n}.soak.test", "manual") for n in range(self.npeople + self.nexpiring)]
        rows += [(f"ci{n}.soak.test", "manual") for n in range(self.jobs)]
        rows += [(f"h{n}.soak.test", "automated") for n in range(HARNESS)]
        rows += [(f"ar{n}.soak.test", "manual") for n in range(ADVANCE)]
        path = workdir / "systems.yml"
        path.write_text("systems:\n" + "".join(f"  - {{fqdn: {fqdn}, arch: x86_64, condition: {condition}}}\n"
                                               for fqdn, condition in rows))
        self.server.admin_cli("system", "import", str(path))

    def _session(self, token: str) -> requests.Session:
        session = KeyedSession()
        session.headers["Authorization"] = f"Bearer {token}"
        # As lablease's own client does (cli/client_http.py): a request whose kept-alive connection the server
        # closed just as it went out (its keep-alive ran out) is sent once more, on a fresh connection. A POST that
        # makes something carries an Idempotency-Key, so one the server did read answers as it first did.
        for scheme in ("http://", "https://"):
            session.mount(scheme, once_more(None))
        self.sessions.append(session)
        return session

    def _add_people(self, count: int) -> list[str]:
        """Their tokens: made in one transaction here, as `lablease-server user add` would make each."""
        with unit_of_work(self.db, self.settings) as uow:
            tokens = [users.add_user(uow, datetime.now(timezone.utc), f"person{n}")[1] for n in range(count)]
            uow.commit()
        return tokens

    def api(self, path: str) -> str:
        return self.server.url + "/api/v1" + path

    # --- the actors -------------------------------------------------------------------------------

    def paced(self, every: float, step) -> None:
        """Call step() every `every` seconds until the soak ends (late steps are not made up for)."""
        next_at = time.monotonic()
        while not self.done.is_set():
            step()
            next_at = max(next_at + every, time.monotonic())
            self.done.wait(next_at - time.monotonic())

    def person(self, n: int) -> None:
        session, fqdn, steps = self.people[n], f"p{n}.soak.test", itertools.cycle(("reserve", "extend", "return"))
        held = None

        def step():
            nonlocal held
            kind = next(steps)
            if kind == "reserve" or held is None:
                answer = self.stats.timed("reserve", lambda: session.post(
                    self.api("/reservations"), json={"system": fqdn, "duration": "10m"}, timeout=30))
                held = answer.json()["id"] if answer is not None else None
            elif kind == "extend":
                self.stats.timed("extend", lambda: session.patch(
                    self.api(f"/reservations/{held}"), json={"extend_by": "5m"}, timeout=30))
            else:
                self.stats.timed("return", lambda: session.delete(self.api(f"/reservations/{held}"), timeout=30))
                held = None

        self.paced(1.0, step)
        if held is not None:
            session.delete(self.api(f"/reservations/{held}"), timeout=30)

    def expiring(self, n: int) -> None:
        """A reservation for 3 s on the person's own system, left to run out: the worker returns it. The next is
        asked for once it has been returned (a duration, not an end the client computes, and no new request
        while the last one is held: on a loaded machine a request can wait seconds before the server reads
        it, and the server rightly refuses an end that has passed, or a system still held)."""
        session, fqdn = self.people[self.npeople + n], f"p{self.npeople + n}.soak.test"

        def step():
            answer = self.stats.timed("reserve", lambda: session.post(
                self.api("/reservations"), json={"system": fqdn, "duration": "3s"}, timeout=30))
            if answer is not None:
                self.returned(session, answer.json()["id"])

        self.paced(5.0, step)

    def returned(self, session: requests.Session, ident: int, within: float = 60.0) -> None:
        """Wait for the worker to return a reservation left to run out (an error when it has not, `within`
        seconds after it was made)."""
        deadline = time.monotonic() + within
        while not self.done.is_set():
            answer = session.get(self.api(f"/reservations/{ident}"), timeout=30)
            if answer.ok and answer.json().get("returned_at"):
                return
            if time.monotonic() > deadline:
                self.stats.error("expiry", f"expiry: reservation {ident} not returned {within:.0f} s after it was made")
                return
            self.done.wait(0.5)

    def heartbeats(self) -> None:
        """self.jobs reservations with a heartbeat, each renewed every HEARTBEAT_EVERY seconds, spread evenly."""
        held = []
        for n in range(self.jobs):
            answer = self.stats.timed("reserve", lambda: self.admin.post(self.api("/reservations"), json={
                "system": f"ci{n}.soak.test", "duration": "1d", "heartbeat": "90s"}, timeout=30))
            held.append(answer.json()["id"] if answer is not None else None)
        held = [h for h in held if h is not None]
        # Several clients, as many CI jobs are: one alone cannot send 17 a second when a request takes 60 ms.
        beaters = [threading.Thread(target=self.beat, args=(held[n::HEARTBEATERS],)) for n in range(HEARTBEATERS)]
        for beater in beaters:
            beater.start()
        for beater in beaters:
            beater.join()

    def beat(self, held: list[int]) -> None:
        if not held:
            return
        session, ids = self._session(self.server.tokens["admin"]), itertools.cycle(held)
        self.paced(HEARTBEAT_EVERY / len(held), lambda: self.stats.timed("heartbeat", lambda: session.post(
            self.api(f"/reservations/{next(ids)}/heartbeat"), timeout=30)))

    def harness(self) -> None:
        """Submit a one-recipe job; it runs at once on an automated system; finish it, as a harness would."""
        def step():
            job = self.stats.timed("job submit", lambda: self.admin.post(self.api("/jobs"), json={
                "recipe_sets": [{"recipes": [{}]}]}, timeout=30),
                expect=(201,))
            if job is None:
                return
            for recipe in (r for rs in job.json()["recipe_sets"] for r in rs["recipes"]):
                if recipe["status"] == "running":
                    self.stats.timed("recipe finish", lambda: self.admin.patch(
                        self.api(f"/recipes/{recipe['id']}"), json={"status": "completed", "result": "pass"},
                        timeout=30))
                else:  # no automated system free (another harness step holds it): take the job back
                    self.stats.timed("job cancel", lambda: self.admin.post(
                        self.api(f"/jobs/{job.json()['id']}/cancel"), timeout=30))

        self.paced(1.0 * HARNESS, step)

    def advance(self, n: int) -> None:
        """An advance reservation 30 s ahead for 20 s on its own system: the worker starts and ends it. (Its start
        leaves room for a slow request: a start that has passed when the request is read is refused.)"""
        def step():
            start = datetime.now(timezone.utc).replace(microsecond=0) + timedelta(seconds=30)
            self.stats.timed("advance create", lambda: self.admin.post(self.api("/advance-reservations"), json={
                "hosts": [f"ar{n}.soak.test"], "start": rfc3339(start), "duration": "20s"}, timeout=30),
                expect=(201,))

        self.paced(35.0, step)

    def reader(self, n: int) -> None:
        reads = itertools.cycle((("list systems", "/api/v1/systems?limit=50"),
                                 ("list reservations", "/api/v1/reservations?limit=50"),
                                 ("list queue", "/api/v1/queue"),
                                 ("page systems", "/systems"), ("page reservations", "/reservations")))

        def step():
            op, path = next(reads)
            self.stats.timed(op, lambda: self.admin.get(self.server.url + path, timeout=30))

        self.paced(0.25, step)

    # --- measuring --------------------------------------------------------------------------------

    def processes(self) -> dict[int, tuple[float, int]]:
        """pid -> (resident MB, open descriptors) of the serving process and all its children."""
        found, todo = {}, [self.server.process.pid]
        while todo:
            pid = todo.pop()
            try:
                status = Path(f"/proc/{pid}/status").read_text()
                rss = int(next(line for line in status.splitlines() if line.startswith("VmRSS:")).split()[1])
                found[pid] = (rss / 1024, len(os.listdir(f"/proc/{pid}/fd")))
                for task in Path(f"/proc/{pid}/task").iterdir():
                    todo += [int(child) for child in (task / "children").read_text().split()]
            except (FileNotFoundError, ProcessLookupError, StopIteration):
                continue
        return found

    def database_size(self) -> float:
        if self.database_url.startswith("sqlite"):
            path = Path(self.database_url.removeprefix("sqlite:///"))
            return sum(p.stat().st_size for p in path.parent.glob(path.name + "*")) / 2**20
        with self.db.reader.connect() as connection:
            return connection.execute(text("SELECT pg_database_size(current_database())")).scalar() / 2**20

    def expiry_lateness(self, since: datetime) -> list[float]:
        """Seconds between each reservation's end and its return by the worker, for those returned since."""
        with self.db.reader.connect() as connection:
            rows = connection.execute(text("SELECT end_at, returned_at FROM reservations WHERE return_reason = "
                                           "'expired' AND returned_at >= :since"), {"since": since}).all()
        parse = (lambda value: value if isinstance(value, datetime)
                 else datetime.fromisoformat(str(value)))
        return [(parse(returned) - parse(end)).total_seconds() for end, returned in rows]

    def minute(self, number: int, since: datetime) -> dict:
        latencies, errors = self.stats.take()
        received = len(self.receiver.requests)
        webhooks, self.webhooks_seen = received - self.webhooks_seen, received
        with unit_of_work(self.db, self.settings, write=False) as uow:
            backlog = snapshot(uow, datetime.now(timezone.utc))["outbox"]["backlog"]
        processes = self.processes()
        row = {"minute": number, "ops": {op: (len(values), pct(values, 50) * 1000, pct(values, 99) * 1000)
                                         for op, values in sorted(latencies.items())},
               "errors": sum(errors.values()), "processes": processes,
               "rss": sum(rss for rss, _ in processes.values()), "fds": sum(fds for _, fds in processes.values()),
               "database_mb": self.database_size(), "backlog": backlog, "webhooks": webhooks,
               "lateness": self.expiry_lateness(since)}
        self.minutes.append(row)
        return row

    def print_minute(self, row: dict, seconds: float) -> None:
        lateness = row["lateness"]
        self.out(f"[{self.name}] minute {row['minute']}: errors {row['errors']}; "
                 f"rss {row['rss']:.0f} MB, fds {row['fds']} "
                 f"({', '.join(f'{pid}: {rss:.0f} MB/{fds}' for pid, (rss, fds) in sorted(row['processes'].items()))}); "
                 f"database {row['database_mb']:.1f} MB; outbox backlog {row['backlog']}; "
                 f"webhooks {row['webhooks']}; expiry lateness p99 {pct(lateness, 99):.2f} s ({len(lateness)})")
        for op, (count, p50, p99) in row["ops"].items():
            self.out(f"[{self.name}]   {op:<18} {count / seconds:7.1f}/s  p50 {p50:7.1f} ms  p99 {p99:7.1f} ms")

    # --- the run ----------------------------------------------------------------------------------

    def run(self, seconds: float, minute: float = 60.0) -> dict:
        actors = ([threading.Thread(target=self.person, args=(n,)) for n in range(self.npeople)]
                  + [threading.Thread(target=self.expiring, args=(n,)) for n in range(self.nexpiring)]
                  + [threading.Thread(target=self.heartbeats)]
                  + [threading.Thread(target=self.harness)]
                  + [threading.Thread(target=self.advance, args=(n,)) for n in range(ADVANCE)]
                  + [threading.Thread(target=self.reader, args=(n,)) for n in range(READERS)])
        for actor in actors:
            actor.start()
        started = time.monotonic()
        try:
            for number in itertools.count(1):
                since = datetime.now(timezone.utc)
                end = min(started + number * minute, started + seconds)
                self.done.wait(max(0.0, end - time.monotonic()))
                self.print_minute(self.minute(number, since), minute)
                if end >= started + seconds:
                    break
        finally:
            self.done.set()
            for actor in actors:
                actor.join(60)
        return {"minutes": self.minutes, "error_samples": self.stats.error_samples}

    def close(self) -> None:
        for session in self.sessions:  # a stopping gunicorn would wait for their kept-alive connections
            session.close()
        self.server.stop()
        self.db.dispose()
        self.receiver.close()


def verdict(minutes: list[dict], warmup: int) -> dict:
    """The aims over a run whose first `warmup` minutes (rows) are the reference."""
    reference, rest = minutes[:warmup], minutes[warmup:] or minutes[-1:]
    base_rss = reference[-1]["rss"]
    p99_before = {op: max(row["ops"][op][2] for row in reference if op in row["ops"])
                  for op in {op for row in reference for op in row["ops"]}}
    p99_after = {op: max(row["ops"][op][2] for row in rest if op in row["ops"])
                 for op in {op for row in rest for op in row["ops"]}}
    lateness = [value for row in minutes for value in row["lateness"]]
    return {"errors": sum(row["errors"] for row in minutes),
            "rss_growth": max(row["rss"] for row in rest) / base_rss - 1,
            "p99_ratio": {op: p99_after[op] / max(p99_before[op], 1e-9) for op in p99_after if op in p99_before},
            "lateness_p99": pct(lateness, 99), "expired": len(lateness),
            "backlog_bounded": rest[-1]["backlog"] <= max(row["backlog"] for row in reference) + 50,
            "webhooks": sum(row["webhooks"] for row in minutes)}


def soak(name: str, url: str, workdir: Path, seconds: float, warmup: float, scale: float, minute: float = 60.0,
         out=print, people: int = PEOPLE, expiring: int = EXPIRING) -> dict:
    """Run one soak and judge it: the verdict, with every minute's row."""
    began = time.monotonic()
    run = Soak(name, url, workdir, scale, out, people, expiring)
    out(f"[{name}] server and {run.jobs + len(run.people) + HARNESS + ADVANCE} systems set up in "
        f"{time.monotonic() - began:.0f} s")
    try:
        result = run.run(seconds, minute)
    finally:
        run.close()
    found = verdict(result["minutes"], max(1, round(warmup / minute)))
    out(f"[{name}] over {seconds / 60:g} min: errors {found['errors']}; resident memory growth after the warm-up "
        f"{found['rss_growth'] * 100:+.1f} % (aim <= 10 %); p99 after / warm-up: "
        + ", ".join(f"{op} {ratio:.2f}" for op, ratio in sorted(found["p99_ratio"].items()))
        + f" (aim <= 2); expiry lateness p99 {found['lateness_p99']:.2f} s over {found['expired']} (aim < 2 s); "
        f"outbox backlog bounded: {found['backlog_bounded']}; webhooks received {found['webhooks']}")
    for sample in result["error_samples"]:
        out(f"[{name}] error: {sample}")
    return {**found, **result}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--minutes", type=float, default=30, help="how long the load runs (default 30)")
    parser.add_argument("--warmup", type=float, default=5, help="minutes measured as the reference (default 5)")
    parser.add_argument("--database", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--scale", type=float, default=1.0, help="fraction of the 500 heartbeating CI jobs")
    parser.add_argument("--every", type=float, default=60, help="seconds between two printed rows (default 60)")
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="lablease-soak-"))
    print(f"machine: {os.cpu_count()} cores; load average before: "
          + " ".join(f"{x:.2f}" for x in os.getloadavg()) + f"; {args.minutes:g} min per database")
    postgres = ThrowawayPostgres().start() if args.database in ("postgresql", "both") else None
    failed = False
    try:
        for name in ("sqlite", "postgresql"):
            if args.database not in (name, "both"):
                continue
            url = (f"sqlite:///{workdir / 'sqlite.db'}" if name == "sqlite" else postgres.create_database("soak"))
            found = soak(name, url, workdir / name, args.minutes * 60, args.warmup * 60, args.scale, args.every)
            failed |= bool(found["errors"] or found["rss_growth"] > 0.10 or found["lateness_p99"] >= 2
                           or any(ratio > 2 for ratio in found["p99_ratio"].values())
                           or not found["backlog_bounded"])
    finally:
        if postgres is not None:
            postgres.stop()
    print("load average after: " + " ".join(f"{x:.2f}" for x in os.getloadavg()))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
