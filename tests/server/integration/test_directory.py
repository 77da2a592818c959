"""Sign-in with the site's directory, against a real OpenLDAP slapd (StartTLS under a test CA), on both databases.

One slapd for the module (tests/support/directory.py); each test uses people of its own, so the changes one
makes to the directory (a member removed, a person deleted) do not reach another.
"""
import itertools
import xmlrpc.client

import pytest

from lablease.config import Settings
from lablease.services.people import users
from lablease.store.uow import UnitOfWork
from lablease.worker.loop import Worker
from tests.server.integration.conftest import Caller, Lab
from tests.server.web.conftest import Person, give_password
from tests.support.directory import GROUPS, PEOPLE, entry, person_ldif, start_slapd
from tests.support.tls import TestCA

PASSWORDS = {"carol": "carol's directory secret", "erin": "erin's secret 1"}
NEWCOMERS = itertools.count(1)
LDIF = (person_ldif("carol", PASSWORDS["carol"], "Carol Jones", "carol@example.test")
        + person_ldif("erin", PASSWORDS["erin"], "Erin Stone", "erin@example.test")
        + f"dn: cn=lab-admins,{GROUPS}\nobjectClass: groupOfNames\ncn: lab-admins\n"
          f"member: uid=carol,{PEOPLE}\n\n"
        + f"dn: cn=racks,{GROUPS}\nobjectClass: posixGroup\ncn: racks\ngidNumber: 500\nmemberUid: carol\n\n"
        + f"dn: cn=qe,{GROUPS}\nobjectClass: groupOfNames\ncn: qe\nmember: uid=carol,{PEOPLE}\n\n")


@pytest.fixture(scope="module")
def slapd(tmp_path_factory):
    server = start_slapd(tmp_path_factory, LDIF)
    yield server
    server.stop()


@pytest.fixture
def lab(db, tmp_path, slapd):
    lab = Lab(db, Settings(data_dir=str(tmp_path / "data"), **slapd.settings()))
    lab.slapd, lab.passwords = slapd, set()
    return lab


def listed(lab: Lab) -> dict:
    """The users as `lablease-server user list` shows them."""
    with UnitOfWork(lab.db) as uow:
        return {user["name"]: user for user in users.user_list(uow)}


def signed_in(lab: Lab, name: str, password: str | None = None):
    who = Person(lab, name)
    response = who.sign_in(PASSWORDS.get(name, "") if password is None else password)
    return who, response


def bkr_login(lab: Lab, name: str, password: str) -> str:
    """The Fault's text of Beaker's auth.login_password, as bkr sends it."""
    body = xmlrpc.client.dumps((name, password, None), "auth.login_password", allow_none=True)
    response = lab.client.post("/bkr/client/", data=body, content_type="text/xml")
    try:
        xmlrpc.client.loads(response.get_data(), use_builtin_types=True)
    except xmlrpc.client.Fault as fault:
        return fault.faultString
    raise AssertionError("auth.login_password succeeded")


def test_a_directory_person_signs_in_becomes_a_user_with_the_directory_groups_which_cannot_be_edited(lab):
    lab.alice.post("/groups", {"name": "qe", "members": ["bob"]})  # lablease's own, named as a directory group
    carol, response = signed_in(lab, "carol")
    assert response.status_code == 303, response.get_data(as_text=True)[-1500:]
    assert "carol" in carol.page("/systems")  # the session works: her name in the page's header
    carol_user = listed(lab)["carol"]
    assert carol_user["email"] == "carol@example.test"
    assert carol_user["groups"] == ["lab-admins", "racks"]  # groupOfNames/member and posixGroup/memberUid
    # The directory's groups follow the directory: a hand edit is refused, saying where to change them
    status, problem = lab.admin.post("/groups/lab-admins/members", {"user": "bob"})
    assert status == 409 and "comes from the directory (cn=lab-admins,ou=groups" in problem["detail"]
    assert lab.admin.delete("/groups/racks/members/carol")[0] == 409
    # lablease's own group of the same name keeps its members, and stays editable by its owner
    assert lab.admin.get("/groups/qe")[1]["members"] == ["alice", "bob"]
    assert lab.alice.delete("/groups/qe/members/bob")[0] == 204


@pytest.mark.parametrize("name, password", [("carol", "not carol's password"), ("nobody", "whatever it is"),
                                            ("carol", ""), ("*", "anything at all"), (")(uid=*", "anything"),
                                            ("carol\x00", PASSWORDS["carol"])])
def test_wrong_passwords_unknown_people_and_filter_injections_are_refused(lab, name, password):
    _, response = signed_in(lab, name, password)
    assert response.status_code == 401
    assert "unknown user name or wrong password" in response.get_data(as_text=True)
    assert "carol" not in listed(lab)  # nobody was made


def test_failed_directory_sign_ins_count_towards_the_throttle(lab):
    for _ in range(lab.app.web.signins.limits["name"]):
        assert signed_in(lab, "carol", "a wrong password")[1].status_code == 401
    assert signed_in(lab, "carol")[1].status_code == 429  # her right password is not even tried now


def test_the_worker_sync_takes_away_what_a_directory_group_gave_and_ends_a_removed_persons_tokens(lab):
    name = f"dave{next(NEWCOMERS)}"  # a person of this test's own: it removes them from the directory
    admin = lab.slapd.admin()
    try:
        assert admin.add(f"uid={name},{PEOPLE}", attributes=entry(name, "dave's directory secret"))
        assert admin.modify(f"cn=lab-admins,{GROUPS}", {"member": [("MODIFY_ADD", [f"uid={name},{PEOPLE}"])]})
        dave, response = signed_in(lab, name, "dave's directory secret")
        assert response.status_code == 303
        for fqdn in ("s1.lab.test", "s2.lab.test"):  # the directory's group lab-admins may reserve them
            lab.system(fqdn, condition="manual")
            assert lab.admin.put(f"/systems/{fqdn}/access-policy", {"rules": [
                {"permission": "view", "everybody": True}, {"permission": "reserve", "group": "lab-admins"}]})[0] == 200
        with UnitOfWork(lab.db) as uow:  # as `lablease-server token create` would
            token = users.create_token(uow, lab.clock(), name, "ci")
            uow.commit()
        api = Caller(lab.client, token)
        assert api.post("/reservations", {"system": "s1.lab.test", "duration": "1h"})[0] == 201
        worker = Worker(lab.settings, lab.db, lab.clock)
        assert admin.modify(f"cn=lab-admins,{GROUPS}", {"member": [("MODIFY_DELETE", [f"uid={name},{PEOPLE}"])]})
        worker.sync_directory_if_due()
        assert api.get("/me")[1]["groups"] == []
        status, problem = api.post("/reservations", {"system": "s2.lab.test", "duration": "1h"})
        assert status == 403, problem
        # Gone from the directory: the token and the web session end at the next sync
        assert admin.delete(f"uid={name},{PEOPLE}")
    finally:
        admin.unbind()
    lab.clock.advance(minutes=16)  # ldap_sync_interval (15 minutes) later
    worker.sync_directory_if_due()
    assert api.get("/me")[0] == 401
    assert dave.get("/systems").status_code == 303  # back to the sign-in page
    assert signed_in(lab, name, "dave's directory secret")[1].status_code == 401


def test_starttls_under_another_ca_is_refused_as_the_directorys_outage(db, slapd, tmp_path):
    other = TestCA(tmp_path / "other-ca", "not the directory's CA")
    lab = Lab(db, Settings(data_dir=str(tmp_path / "data"), **slapd.settings(ldap_ca_file=str(other.cert))))
    _, response = signed_in(lab, "carol")
    assert response.status_code == 503
    assert f"StartTLS with the directory {lab.settings.ldap_url} failed" in response.get_data(as_text=True)


def test_a_stopped_directory_refuses_its_people_with_503_and_local_users_still_sign_in(lab):
    give_password(lab, "alice")
    lab.slapd.stop()
    try:
        _, response = signed_in(lab, "erin")
        assert response.status_code == 503
        assert f"the directory {lab.settings.ldap_url} does not answer" in response.get_data(as_text=True)
        assert Person(lab, "alice").sign_in().status_code == 303
        # bkr's auth.login_password: the same 503's words, and each counts towards the sign-in throttle
        said = [bkr_login(lab, "frank", "frank's password") for _ in range(6)]
        assert said[0].startswith(f"the directory {lab.settings.ldap_url} does not answer"), said
        assert said[-1] == "too many failed logins: try again in 15 minute(s)", said
        Worker(lab.settings, lab.db, lab.clock).sync_directory_if_due()  # logged; the worker goes on
    finally:
        lab.slapd.start()
    assert signed_in(lab, "erin")[1].status_code == 303
