"""Secrets stay hidden: group webhooks shown to owners only; webhook secrets and power credentials sealed at rest."""
from sqlalchemy import text

from lablease.services.sealing import seal_all
from lablease.store.tables import System, User
from lablease.store.uow import UnitOfWork

POWER = {"driver": "ipmitool", "address": "bmc-s1", "user": "root", "password": "ipmi-pw-7731"}


def _raw(lab, sql: str) -> list:
    """Rows exactly as the database holds them (no column types in between)."""
    with lab.db.writer.connect() as connection:
        return [tuple(row) for row in connection.exec_driver_sql(sql)]


def test_a_groups_webhook_is_shown_to_its_owners_and_admins_only(lab):
    lab.alice.post("/groups", {"name": "team", "members": ["bob"]})
    assert lab.alice.patch("/groups/team", {"webhook_url": "https://chat.example.com/hooks/k3y"})[0] == 200
    carol = lab.user("carol")
    for caller in (lab.alice, lab.admin):
        assert lab_group(caller)["webhook_url"] == "https://chat.example.com/hooks/k3y"
    for caller in (lab.bob, carol):  # a member, and somebody else
        assert "webhook_url" not in lab_group(caller)
        assert "k3y" not in str(caller.get("/groups")[1])


def lab_group(caller) -> dict:
    status, group = caller.get("/groups/team")
    assert status == 200
    [listed] = [g for g in caller.get("/groups")[1] if g["name"] == "team"]
    assert listed == group
    return group


def test_webhook_secrets_and_power_credentials_are_sealed_in_the_database(lab):
    lab.alice.post("/groups", {"name": "team"})
    lab.alice.patch("/me", {"webhook_url": "https://hooks.example.com/a", "webhook_secret": "user-hook-s3cret"})
    lab.alice.patch("/groups/team", {"webhook_secret": "group-hook-s3cret"})
    lab.system(power=POWER, netboot={"mac": "52:54:00:00:00:01", "token": "netboot-t0ken"})
    stored = _raw(lab, "SELECT webhook_secret FROM users WHERE name = 'alice'") + \
        _raw(lab, "SELECT webhook_secret FROM groups WHERE name = 'team'") + \
        _raw(lab, "SELECT power, netboot FROM systems")
    dump = repr(stored)
    for secret in ("user-hook-s3cret", "group-hook-s3cret", "ipmi-pw-7731", "netboot-t0ken"):
        assert secret not in dump
    assert stored[0][0].startswith("fernet:") and stored[1][0].startswith("fernet:")
    assert "bmc-s1" in dump and "52:54:00:00:00:01" in dump  # only the secrets are sealed
    with UnitOfWork(lab.db, write=False) as uow:  # the server itself reads them back
        assert uow.session.query(User).filter_by(name="alice").one().webhook_secret == "user-hook-s3cret"
        assert uow.session.query(System).one().power == POWER
    assert lab.alice.patch("/me", {"webhook_secret": "x" * 200})[0] == 200  # the longest allowed still fits, sealed


def test_secrets_stored_in_plain_text_keep_working_and_are_sealed_by_init(lab):
    lab.system(power={"driver": "ipmitool", "address": "bmc-s1", "user": "root"})
    with lab.db.writer.begin() as connection:  # as an earlier version stored them
        connection.execute(text("UPDATE users SET webhook_secret = 'old-s3cret' WHERE name = 'alice'"))
        connection.execute(text("UPDATE systems SET power = :power"),
                           {"power": '{"driver": "ipmitool", "address": "bmc-s1", "user": "root", '
                                     '"password": "old-pw"}'})
    with UnitOfWork(lab.db, write=False) as uow:
        assert uow.session.query(User).filter_by(name="alice").one().webhook_secret == "old-s3cret"
        assert uow.session.query(System).one().power["password"] == "old-pw"
    with UnitOfWork(lab.db) as uow:
        assert seal_all(uow) == 2
        uow.commit()
    dump = repr(_raw(lab, "SELECT webhook_secret FROM users") + _raw(lab, "SELECT power FROM systems"))
    assert "old-s3cret" not in dump and "old-pw" not in dump
    with UnitOfWork(lab.db, write=False) as uow:
        assert uow.session.query(User).filter_by(name="alice").one().webhook_secret == "old-s3cret"
        assert uow.session.query(System).one().power["password"] == "old-pw"
