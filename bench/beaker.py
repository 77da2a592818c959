"""Beaker's hub at /bkr over a big lab: what `bkr` and mrack send, timed server-side and end to end.

    .venv/bin/python bench/beaker.py [--systems 10000] [--jobs 100000] [--repeat 20] [--no-bkr]

On SQLite and on PostgreSQL (a throwaway server from tests/support/postgres.py)
it builds the migrated schema, bulk-inserts straight into it the systems of
bench/free_systems.py (its `populate`: users admin and alice, systems anyone
may view and reserve) of which every tenth is Automated and held by a current
reservation (a submitted job waits for them in the queue),
and the finished jobs (one recipe set, one recipe with two tasks, on a system,
completed with results), runs ANALYZE, and times, through the WSGI
application in-process (werkzeug's test Client, as bench/free_systems.py does
for pages: routing, session cookie, XML-RPC or Atom, all the server does for
one request), medians and p95 over repetitions:

  system-list --free   GET /bkr/free?tg_format=atom&list_tgp_limit=0, what
                       bkr's system-list --free sends after logging in
                       (bkr/client/commands/cmd_system_list.py); the feed
                       must name exactly the free systems (asserted)
  jobs.upload          a 100-recipe job (10 recipe sets of 10 recipes, two
                       tasks each, hostRequires on arch), as XML-RPC
  to_xml (queued)      taskactions.to_xml of one of those jobs as submitted
  to_xml (finished)    the same job after it ran (every recipe completed on
                       a system with task results), what mrack and
                       bkr job-results read
  to_xml (old job)     one of the bulk-inserted finished jobs
  login+whoami (pw)    auth.login_password then GET /bkr/users/+self: what
                       bkr whoami sends with AUTH_METHOD = "password", as
                       every bkr command signs in: the password passed
                       before (services/people/verified_passwords.py); "first":
                       the process has not seen it, the whole argon2id check
  login+whoami (oauth) auth.login_oauth2 with an API token, then the same GET
  whoami               GET /bkr/users/+self with a session already open
  argon2 verify        the password check alone (argon2id, services/auth/signin.py)

Then, unless --no-bkr, the real `bkr system-list --free` (beaker-client from
`make beaker-client`) against a live server on the same database
(tests/support/live.py), three times: end to end, process start to exit.

Aims (issue 25): system-list --free < 1 s end to end; jobs.upload and to_xml
< 200 ms each server-side; a login + whoami round < 20 ms server-side.
"""
from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
import xmlrpc.client
from datetime import datetime, timedelta, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from sqlalchemy import insert, text, update  # noqa: E402
from werkzeug.test import Client  # noqa: E402

from free_systems import populate, summary, timed  # noqa: E402
from lablease.api import create_app  # noqa: E402
from lablease.config import Settings  # noqa: E402
from lablease.jobxml import normalise_job, parse_job_xml  # noqa: E402
from lablease.services.auth import signin
from lablease.services.people import users  # noqa: E402
from lablease.store.db import Database  # noqa: E402
from lablease.store.migrate import upgrade  # noqa: E402
from lablease.store.tables import Booking, Job, Recipe, RecipeSet, Reservation, System  # noqa: E402
from lablease.store.uow import UnitOfWork  # noqa: E402
from tests.support.postgres import ThrowawayPostgres  # noqa: E402

NOW = datetime.now(timezone.utc).replace(microsecond=0)
PASSWORD = "a long enough bench password"
ALICE = 2  # free_systems.populate: admin is user 1, alice user 2
ATOM = "{http://www.w3.org/2005/Atom}"
FREE_URL = "/bkr/free?tg_format=atom&list_tgp_limit=0"
TASKS = ("/distribution/check-install", "/kernel/fs")
AIM_LIST_MS, AIM_JOB_MS, AIM_LOGIN_MS = 1000.0, 200.0, 20.0


def recipe_xml(arch: str = "x86_64") -> str:
    return (f'<recipe whiteboard="bench"><hostRequires><and><arch op="=" value="{arch}"/></and></hostRequires>'
            + "".join(f'<task name="{name}"/>' for name in TASKS) + "</recipe>")


def job_xml(sets: int, per_set: int) -> str:
    recipe_sets = "".join(f'<recipeSet priority="Normal">{recipe_xml() * per_set}</recipeSet>' for _ in range(sets))
    return f"<job><whiteboard>bench</whiteboard>{recipe_sets}</job>"


def finished_spec() -> dict:
    """A recipe's spec as the parser writes it, for the bulk-inserted jobs."""
    return normalise_job(parse_job_xml(job_xml(1, 1).encode()))["recipe_sets"][0]["recipes"][0]


def chunked(conn, table, rows) -> None:
    for start in range(0, len(rows), 5000):
        conn.execute(insert(table), rows[start:start + 5000])


def hold_every_tenth(db: Database, systems: int) -> int:
    """Current reservations (bookings without an end) on systems 10, 20, ...: they are not free. They are the
    Automated ones (the scheduler's), so a submitted job can run some day but waits in the queue now."""
    held = list(range(10, systems + 1, 10))
    with db.writer.begin() as conn:
        conn.execute(update(System).where(System.id.in_(held)).values(condition="automated"))
        chunked(conn, Booking, [{"id": n, "resource_id": s, "start_at": NOW - timedelta(hours=1), "end_at": None,
                                 "quantity": 1, "exclusive": True, "kind": "reservation", "user_id": 1,
                                 "created_at": NOW} for n, s in enumerate(held, 1)])
        chunked(conn, Reservation, [{"id": n, "system_id": s, "user_id": 1, "booking_id": n, "kind": "manual",
                                     "start_at": NOW - timedelta(hours=1), "end_at": None, "return_loan": False,
                                     "created_at": NOW} for n, s in enumerate(held, 1)])
    return systems - len(held)


def finished_jobs(db: Database, count: int, systems: int) -> None:
    """`count` jobs run and completed in the past, owned by alice: 1 recipe set, 1 recipe, its task results."""
    spec = finished_spec()
    reported = [{"name": name, "result": "pass", "message": ""} for name in TASKS]
    jobs, sets, recipes = [], [], []
    for n in range(1, count + 1):
        started = NOW - timedelta(days=400) + timedelta(minutes=5 * n)
        jobs.append({"id": n, "owner_id": ALICE, "whiteboard": f"old job {n}", "status": "completed",
                     "result": "pass", "submitted_at": started, "finished_at": started + timedelta(hours=1)})
        sets.append({"id": n, "job_id": n, "priority": 2, "status": "completed", "result": "pass",
                     "queued_at": started, "multi": False})
        recipes.append({"id": n, "recipe_set_id": n, "job_id": n, "spec": spec, "status": "completed",
                        "result": "pass", "priority": 2, "queued_at": started, "system_id": 1 + n % systems,
                        "task_results": reported, "started_at": started, "finished_at": started + timedelta(hours=1)})
    with db.writer.begin() as conn:
        for table, rows in ((Job, jobs), (RecipeSet, sets), (Recipe, recipes)):
            chunked(conn, table, rows)
        if db.is_postgresql:  # rows came with their ids: the sequences go past them for the jobs submitted next
            for table in ("jobs", "recipe_sets", "recipes", "bookings", "reservations"):
                conn.execute(text(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                                  f"(SELECT coalesce(max(id), 0) + 1 FROM {table}), false)"))


def run_job(db: Database, job_id: int, systems: int) -> None:
    """The job as it is after it ran: every recipe completed on a system, each task passed."""
    reported = [{"name": name, "result": "pass", "message": ""} for name in TASKS]
    with db.writer.begin() as conn:
        ids = conn.execute(text("SELECT id FROM recipes WHERE job_id = :j ORDER BY id"), {"j": job_id}).scalars()
        for index, recipe_id in enumerate(list(ids)):
            conn.execute(update(Recipe).where(Recipe.id == recipe_id).values(
                status="completed", result="pass", system_id=1 + index % systems, task_results=reported,
                started_at=NOW - timedelta(hours=2), finished_at=NOW - timedelta(hours=1)))
        conn.execute(update(RecipeSet).where(RecipeSet.job_id == job_id).values(status="completed", result="pass"))
        conn.execute(update(Job).where(Job.id == job_id).values(status="completed", result="pass",
                                                                 finished_at=NOW - timedelta(hours=1)))


class Hub:
    """The hub through the WSGI application in-process: one werkzeug Client, which keeps the session cookie."""

    def __init__(self, db: Database, data_dir: Path):
        self.app = create_app(Settings(data_dir=str(data_dir)), db)
        self.client = Client(self.app)

    def call(self, method: str, *params, client: Client | None = None):
        body = xmlrpc.client.dumps(params, method, allow_none=True)
        response = (client or self.client).post("/bkr/client/", data=body, content_type="text/xml")
        assert response.status_code == 200, response.get_data(as_text=True)
        (value,), _ = xmlrpc.client.loads(response.get_data(), use_builtin_types=True)  # a Fault raises
        return value

    def get(self, url: str, client: Client | None = None):
        response = (client or self.client).get(url)
        assert response.status_code == 200, response.get_data(as_text=True)
        return response


def free_titles(hub: Hub) -> list[str]:
    feed = ET.fromstring(hub.get(FREE_URL).get_data())
    return [entry.findtext(f"{ATOM}title") for entry in feed.iter(f"{ATOM}entry")]


def login_round(hub: Hub, token: str | None = None) -> None:
    """What bkr whoami sends: a login (alice's password, or robot's API token as OAuth2), then its user
    document."""
    client = Client(hub.app)
    if token:
        hub.call("auth.login_oauth2", token, client=client)
    else:
        hub.call("auth.login_password", "alice", PASSWORD, client=client)
    assert hub.get("/bkr/users/+self", client).get_json()["user_name"] == ("robot" if token else "alice")


def bkr_end_to_end(db_url: str, workdir: Path, runs: int = 3) -> list[float]:
    """The real `bkr system-list --free` against a live server on this database: seconds per run."""
    from tests.support.bkr import BKR, Bkr
    from tests.support.live import LiveServer

    if not BKR.exists():
        print(f"  (no {BKR}: `make beaker-client` installs it; end-to-end run skipped)", flush=True)
        return []
    server = LiveServer(workdir / "live", db_url, run_worker=False)
    server.data_dir.mkdir(parents=True, exist_ok=True)
    server.admin_cli("init")  # the database is migrated and populated already: its users are kept
    server.launch()
    try:
        bkr, seconds = Bkr(server, workdir, "alice", PASSWORD), []
        for _ in range(runs):
            began = time.perf_counter()
            result = bkr("system-list", "--free")
            seconds.append(time.perf_counter() - began)
            assert result.returncode == 0, result.stderr
        print(f"  bkr system-list --free printed {len(result.stdout.split())} systems", flush=True)
        return seconds
    finally:
        server.stop()


def bench(kind: str, url: str, args) -> dict:
    db = Database(url)
    try:
        upgrade(db)
        began = time.perf_counter()
        populate(db, args.systems, 0)
        free = hold_every_tenth(db, args.systems)
        finished_jobs(db, args.jobs, args.systems)
        with UnitOfWork(db) as uow:
            signin.set_password(uow, NOW, "alice", PASSWORD)
            _, token = users.add_user(uow, NOW, "robot")
            uow.commit()
        with db.writer.begin() as conn:
            conn.execute(text("ANALYZE"))
        print(f"{kind}: inserted {args.systems} systems ({free} free) and {args.jobs} finished jobs in "
              f"{time.perf_counter() - began:.0f} s; load average " + load(), flush=True)
        results: dict = {"free": free}
        hub = Hub(db, args.workdir / kind)
        # As each server worker does once its application is built (cli/serve.py): what lives for ever is out
        # of the collector's way. Without it, full collections of this process's heap (the bench's own objects
        # with the application's) fell inside the timed calls: a profile put ~0.23 s of a 100-recipe upload
        # there, which a server's worker does not pay.
        gc.collect()
        gc.freeze()
        assert hub.call("auth.login_password", "alice", PASSWORD) == "alice"

        free_titles(hub)  # warm
        results["system-list --free"], titles = timed(lambda: free_titles(hub), args.repeat)
        assert len(titles) == free and len(set(titles)) == free, f"{len(titles)} systems listed, {free} free"

        document = job_xml(10, 10)
        hub.call("jobs.upload", document)  # warm
        results["jobs.upload (100 recipes)"], taskspec = timed(lambda: hub.call("jobs.upload", document),
                                                               args.repeat)
        job_id = int(taskspec.split(":")[1])
        results["to_xml (queued job)"], queued = timed(lambda: hub.call("taskactions.to_xml", taskspec),
                                                       args.repeat)
        assert ET.fromstring(queued).get("status") == "Queued", queued[:300]
        assert len(ET.fromstring(queued).findall("recipeSet/recipe")) == 100
        run_job(db, job_id, args.systems)
        results["to_xml (finished job)"], done = timed(lambda: hub.call("taskactions.to_xml", taskspec),
                                                       args.repeat)
        assert ET.fromstring(done).get("status") == "Completed", done[:300]
        old = f"J:{args.jobs // 2}"
        results["to_xml (old 1-recipe job)"], _ = timed(lambda: hub.call("taskactions.to_xml", old), args.repeat)

        login_round(hub)  # warm
        results["login+whoami (password)"], _ = timed(lambda: login_round(hub), args.repeat)

        def first_login():  # as if this process had never seen the password: the whole argon2id check
            signin._VERIFIED = signin.VerifiedPasswords()
            login_round(hub)
        results["login+whoami (password, first)"], _ = timed(first_login, args.repeat)
        results["login+whoami (oauth2)"], _ = timed(lambda: login_round(hub, token), args.repeat)
        results["whoami (session open)"], _ = timed(lambda: hub.get("/bkr/users/+self"), args.repeat)
        hashed = signin._HASHER.hash(PASSWORD)
        results["argon2 verify alone"], _ = timed(lambda: signin._HASHER.verify(hashed, PASSWORD), args.repeat)
        results["load"] = load()
        if not args.no_bkr:
            results["bkr system-list --free (end to end)"] = [
                s * 1000 for s in bkr_end_to_end(url, args.workdir / f"{kind}-bkr")]
        return results
    finally:
        db.dispose()


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


AIMS = (("system-list --free", AIM_LIST_MS), ("bkr system-list --free (end to end)", AIM_LIST_MS),
        ("jobs.upload (100 recipes)", AIM_JOB_MS), ("to_xml (queued job)", AIM_JOB_MS),
        ("to_xml (finished job)", AIM_JOB_MS), ("to_xml (old 1-recipe job)", AIM_JOB_MS),
        ("login+whoami (password)", AIM_LOGIN_MS), ("login+whoami (password, first)", None),
        ("login+whoami (oauth2)", AIM_LOGIN_MS),
        ("whoami (session open)", AIM_LOGIN_MS), ("argon2 verify alone", None))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--systems", type=int, default=10_000)
    parser.add_argument("--jobs", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--no-bkr", action="store_true", help="skip the end-to-end runs of the real bkr")
    parser.add_argument("--only", choices=("sqlite", "postgresql"), help="one database only")
    args = parser.parse_args()

    print(f"machine: {os.cpu_count()} cores, Python {sys.version.split()[0]}; load average before: {load()}",
          flush=True)
    args.workdir = Path(tempfile.mkdtemp(prefix="lablease-bench-beaker-"))
    postgres = ThrowawayPostgres().start() if args.only != "sqlite" else None
    table = {}
    try:
        if args.only != "postgresql":
            table["sqlite"] = bench("sqlite", f"sqlite:///{args.workdir / 'beaker.db'}", args)
        if postgres is not None:
            table["postgresql"] = bench("postgresql", postgres.create_database("beaker"), args)
    finally:
        if postgres is not None:
            postgres.stop()
        shutil.rmtree(args.workdir, ignore_errors=True)

    print(f"\n{args.systems} systems, {args.jobs} finished jobs; server-side through the WSGI app in-process")
    for kind, results in table.items():
        print(f"\n{kind}: {results['free']} systems free; load average after: {results['load']}")
        for case, aim in AIMS:
            times = results.get(case)
            if not times:
                continue
            median = statistics.median(times)
            verdict = "" if aim is None else (
                f"; aim < {aim:g} ms: " + ("meets" if median < aim else f"misses by {median / aim:.1f}x"))
            print(f"  {case:<36} {summary(times)}   ({len(times)} runs{verdict})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
