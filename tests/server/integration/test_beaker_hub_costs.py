"""What the hub at /bkr costs in SQL statements does not grow with the lab or the job (SQLite and PostgreSQL):
bkr system-list's feeds are column queries whatever the number of systems, and jobs.upload writes a job's
recipes in a few statements whatever their number (an N+1 coming back fails these). Who is listed as free or
available follows domain.permissions.may_use for every kind of system (lent, owned, held, by rule)."""
import xml.etree.ElementTree as ET
import xmlrpc.client

import pytest

from lablease.services.auth import signin
from lablease.store.uow import UnitOfWork

from .conftest import START
from .test_jobs_api import _statements

PASSWORD = "a long enough password"
ATOM = "{http://www.w3.org/2005/Atom}"


def signed_in(lab, name: str = "alice"):
    """An XML-RPC caller on the lab's client, signed in as `name` (the session cookie stays on the client)."""
    with UnitOfWork(lab.db) as uow:
        signin.set_password(uow, START, name, PASSWORD)
        uow.commit()

    def call(method, *params):
        response = lab.client.post("/bkr/client/", data=xmlrpc.client.dumps(params, method, allow_none=True),
                                   content_type="text/xml")
        assert response.status_code == 200
        return xmlrpc.client.loads(response.get_data())[0][0]  # a Fault raises
    assert call("auth.login_password", name, PASSWORD) == name
    return call


def feed(lab, which: str) -> list[str]:
    response = lab.client.get(f"/bkr/{which}?tg_format=atom&list_tgp_limit=0")
    assert response.status_code == 200, response.get_data(as_text=True)
    return sorted(entry.findtext(f"{ATOM}title") for entry in ET.fromstring(response.get_data()).iter(f"{ATOM}entry"))


def kinds_of_systems(lab, suffix: str) -> None:
    """One system of each kind that decides "free": plain manual, manual held by bob, manual lent to bob,
    manual whose reserve rule names bob only, automated (the scheduler may give it to alice), automated
    owned by alice whose rules name nobody, broken, removed."""
    for name, condition in (("plain", "manual"), ("held", "manual"), ("lent", "manual"), ("bobs", "manual"),
                            ("auto", "automated"), ("mine", "automated"), ("broken", "broken"),
                            ("gone", "manual")):
        lab.system(f"{name}{suffix}.lab.test", condition=condition, **({"owner": "alice"} if name == "mine" else {}))
    assert lab.bob.post("/reservations", {"system": f"held{suffix}.lab.test"})[0] == 201
    assert lab.admin.post(f"/systems/lent{suffix}.lab.test/loan", {"recipient": "bob"})[0] == 201
    for fqdn, rules in ((f"bobs{suffix}.lab.test", [{"permission": "view", "everybody": True},
                                                    {"permission": "reserve", "user": "bob"}]),
                        (f"mine{suffix}.lab.test", [{"permission": "view", "everybody": True}])):
        assert lab.admin.put(f"/systems/{fqdn}/access-policy", {"rules": rules})[0] == 200
    assert lab.admin.delete(f"/systems/gone{suffix}.lab.test")[0] == 204


def test_system_feeds_follow_the_access_rules_in_a_fixed_number_of_statements(lab):
    kinds_of_systems(lab, "1")
    signed_in(lab)
    names = lambda *kinds: sorted(f"{kind}{n}.lab.test" for n in "1" for kind in kinds)  # noqa: E731
    assert feed(lab, "free") == names("auto", "mine", "plain")
    assert feed(lab, "available") == names("auto", "held", "mine", "plain")
    assert feed(lab, "mine") == names("mine")
    assert feed(lab, "removed") == names("gone")
    costs = {which: _statements(lab, lambda which=which: feed(lab, which))
             for which in ("free", "available", "mine", "")}
    for n in "23456":
        kinds_of_systems(lab, n)
    names = lambda *kinds: sorted(f"{kind}{n}.lab.test" for n in "123456" for kind in kinds)  # noqa: E731
    assert feed(lab, "free") == names("auto", "mine", "plain")
    assert feed(lab, "") == names("auto", "bobs", "broken", "held", "lent", "mine", "plain")
    assert {which: _statements(lab, lambda which=which: feed(lab, which)) for which in costs} == costs
    assert _systems_loaded(lambda: [feed(lab, which) for which in costs]) == 0  # columns, no System object


def _systems_loaded(call) -> int:
    """How many System objects the ORM builds while call() runs (10,000 of them took seconds)."""
    from sqlalchemy import event

    from lablease.store.tables import System

    count = [0]

    def loaded(*args):
        count[0] += 1
    event.listen(System, "load", loaded)
    try:
        call()
    finally:
        event.remove(System, "load", loaded)
    return count[0]


def _job(sets: int, per_set: int) -> str:
    recipe = ('<recipe><hostRequires><and><arch op="=" value="x86_64"/></and></hostRequires>'
              '<task name="/distribution/check-install"/><task name="/kernel/fs"/></recipe>')
    return "<job>" + f"<recipeSet>{recipe * per_set}</recipeSet>" * sets + "</job>"


def test_uploading_a_job_costs_the_same_statements_whatever_its_recipes(lab):
    """jobs.upload writes a set's recipes in a fixed number of statements: no class lookup or insert per
    recipe (each set is still placed on its own by the scheduler)."""
    for n in range(12):  # all held: every set waits in the queue, as in a busy lab
        lab.system(f"a{n}.lab.test", condition="automated")
        assert lab.admin.post("/reservations", {"system": f"a{n}.lab.test"})[0] == 201
    call = signed_in(lab)
    call("jobs.upload", _job(2, 2))  # the requirement class exists from here on, as in a lab that runs jobs
    costs = []
    for per_set in (2, 10):
        spec = []
        costs.append(_statements(lab, lambda per_set=per_set: spec.append(call("jobs.upload", _job(2, per_set)))))
        status, job = lab.alice.get(f"/jobs/{spec[0].split(':')[1]}")
        assert status == 200 and [len(rs["recipes"]) for rs in job["recipe_sets"]] == [per_set, per_set]
    # Five times the recipes, no more statements (a per-recipe lookup or insert would add 16 here) but for one
    # thing: the scheduler gets each new set from the session's identity map, which holds it weakly, and reads
    # it again (the set, then its recipes: 2) when the collector has taken it, so either job may cost up to
    # 2 per set (4) more than the other, as the collector ran.
    assert costs[1] <= costs[0] + 4, costs


# sqlite_stat1 as ANALYZE writes it for a lab with 100,000 finished one-recipe jobs and a few waiting
# (bench/beaker.py): status has two common values, so its index looks like half the table per value.
_BIG_HISTORY = {
    ("recipes", None): "100000", ("recipes", "ix_recipes_status"): "100000 50000",
    ("recipes", "ix_recipes_recipe_set_id"): "100000 1", ("recipes", "ix_recipes_job_id"): "100000 1",
    ("recipes", "ix_recipes_system_id"): "100000 10", ("recipes", "ix_recipes_watchdog_at"): "100000 100000",
    ("recipes", "ix_recipes_class_queue"): "100000 50000 50000 50000 1 1",
    ("recipes", "ix_recipes_host_recipe_id"): "10 1", ("recipes", "ix_recipes_assigned"): "1 1",
    ("recipes", "ix_recipes_holding"): "10 1", ("recipe_sets", None): "100000",
    ("recipe_sets", "ix_recipe_sets_job_id"): "100000 1", ("jobs", None): "100000",
}


def _recipe_reads(lab, call) -> list[tuple[str, tuple]]:
    """The SELECTs reading the recipes table that call() runs, with their parameters."""
    from sqlalchemy import event

    seen = []

    def record(conn, cursor, statement, parameters, context, executemany):
        if statement.lstrip().upper().startswith("SELECT") and " recipes" in statement:
            seen.append((statement, tuple(parameters)))
    for engine in {lab.db.writer, lab.db.reader}:
        event.listen(engine, "before_cursor_execute", record)
    try:
        call()
    finally:
        for engine in {lab.db.writer, lab.db.reader}:
            event.remove(engine, "before_cursor_execute", record)
    return seen


def _plans(lab, reads) -> list[str]:
    """SQLite's plan of each read, one line of its steps each."""
    with lab.db.writer.connect() as conn:
        return [" / ".join(row[3] for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", params))
                for statement, params in reads]


@pytest.mark.parametrize("database_url", ["sqlite"], indirect=True)  # PostgreSQL plans from statistics of its own
def test_a_jobs_recipes_are_found_through_an_index_with_or_without_statistics(lab):
    """Submitting a job, reading it back and Beaker's results XML of it never scan the recipes table, which
    holds the lab's whole history: not on a new SQLite database (no statistics: `host_recipe_id IS NULL`, every
    host recipe, must not look selective through the guests' index), nor once ANALYZE has run on a big
    history (the status index looks like half the table per value: the sets holding systems, a handful,
    must still come from an index)."""
    for n in range(3):  # held: the sets wait in the queue, as in a busy lab
        lab.system(f"a{n}.lab.test", condition="automated")
        assert lab.admin.post("/reservations", {"system": f"a{n}.lab.test"})[0] == 201
    call = signed_in(lab)
    document, taskspec = _job(2, 2), []
    for statistics in ("none", "a big history"):
        if statistics != "none":
            with lab.db.writer.begin() as conn:
                conn.exec_driver_sql("ANALYZE")
                conn.exec_driver_sql("DELETE FROM sqlite_stat1")
                for (table, index), stat in _BIG_HISTORY.items():
                    conn.exec_driver_sql("INSERT INTO sqlite_stat1 VALUES (?, ?, ?)", (table, index, stat))
                conn.exec_driver_sql("ANALYZE sqlite_schema")  # the planner reads the statistics again
        reads = _recipe_reads(lab, lambda: taskspec.append(call("jobs.upload", document)))
        reads += _recipe_reads(lab, lambda: call("taskactions.to_xml", taskspec[-1]))
        reads += _recipe_reads(lab, lambda: lab.alice.get(f"/jobs/{taskspec[-1].split(':')[1]}"))
        assert len(reads) >= 5, reads  # the job's recipes, its sets', the guests, the holding sets
        plans = _plans(lab, reads)
        scans = [(plan, statement) for plan, (statement, _) in zip(plans, reads)
                 if any(step == "SCAN recipes" or ("host_recipe_id IS NULL" in statement and
                                                   "ix_recipes_host_recipe_id" in step)
                        for step in plan.split(" / "))]
        assert not scans, (statistics, scans)
