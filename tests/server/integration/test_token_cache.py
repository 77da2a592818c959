"""A verified token is trusted for token_cache_seconds: a change on this host applies at once, one made by a
server on another host within that bound (docs/access.md, "Tokens")."""
from sqlalchemy import update
from werkzeug.test import Client

from lablease.api import create_app
from lablease.services.people import users
from lablease.services.people.token_cache import TokenCache
from lablease.store.tables import User
from lablease.store.uow import UnitOfWork

from .conftest import START, Caller, at


def _another_host(lab, tmp_path):
    """A second API process on the same database and clock, on another host: it never sees this host's stamp."""
    app = create_app(lab.settings, lab.db, lab.clock)
    app.tokens = TokenCache(lab.settings.token_cache_seconds, tmp_path / "another-host" / "stamp")
    return lambda name: Caller(Client(app), lab.tokens[name])


def _past_the_bound(lab):
    lab.clock.advance(seconds=lab.settings.token_cache_seconds.total_seconds())


def test_a_revoked_token_is_refused_at_once_here_and_within_the_bound_elsewhere(lab, tmp_path):
    far = _another_host(lab, tmp_path)("bob")
    assert lab.bob.get("/me")[0] == 200 and far.get("/me")[0] == 200  # both processes have verified it
    with UnitOfWork(lab.db) as uow:  # as `lablease-server token revoke` does, in a process of its own
        assert users.revoke_tokens(uow, lab.clock(), "bob") == 1
        uow.commit()
    status, problem = lab.bob.get("/me")
    assert status == 401 and problem["detail"] == "the API token was revoked"
    assert far.get("/me")[0] == 200  # the other host still trusts what it verified ...
    _past_the_bound(lab)
    status, problem = far.get("/me")  # ... until the bound
    assert status == 401 and problem["detail"] == "the API token was revoked"


def test_group_and_admin_changes_apply_at_once_here_and_within_the_bound_elsewhere(lab, tmp_path):
    lab.system()
    _, policy = lab.admin.get("/systems/s1.lab.test/access-policy")
    everybody = next(r for r in policy["rules"] if r["permission"] == "reserve")
    lab.admin.delete(f"/systems/s1.lab.test/access-policy/rules/{everybody['id']}")
    lab.admin.post("/groups", {"name": "qe"})
    lab.admin.post("/systems/s1.lab.test/access-policy/rules", {"permission": "reserve", "group": "qe"})
    far = _another_host(lab, tmp_path)("bob")
    for process in (lab.bob, far):  # both verify bob's token: not in qe, not an admin
        assert process.post("/reservations", {"system": "s1.lab.test"})[0] == 403
        assert process.get("/me")[1]["admin"] is False

    assert lab.admin.post("/groups/qe/members", {"user": "bob"})[0] == 200
    with UnitOfWork(lab.db) as uow:
        uow.session.execute(update(User).where(User.name == "bob").values(is_admin=True))
        uow.commit()
    later = {"system": "s1.lab.test", "start": at(START.replace(day=25)), "duration": "1h"}
    assert lab.bob.post("/reservations", later)[0] == 201 and lab.bob.get("/me")[1]["admin"] is True
    assert far.get("/me")[1]["admin"] is False  # the other host: the actor it verified, until the bound
    _past_the_bound(lab)
    assert far.get("/me")[1]["admin"] is True
    assert far.post("/reservations", {"system": "s1.lab.test", "duration": "1h"})[0] == 201
