"""What the hub at /bkr costs in SQL statements does not grow with the lab or the job (SQLite and PostgreSQL):
bkr system-list's feeds are column queries whatever the number of systems, and jobs.upload writes a job's
recipes in a few statements whatever their number (an N+1 coming back fails these). Who is listed as free or
available follows domain.permissions.may_use for every kind of system (lent, owned, held, by rule)."""
import xml.etree.ElementTree as ET
import xmlrpc.client

from lablease.services import signin
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
