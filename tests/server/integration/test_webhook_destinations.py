"""Webhooks are not a way into the lab's network: refused when set (422) and again when sent."""
import socket
from datetime import timedelta

import pytest

from lablease.config import Settings
from lablease.store.tables import Outbox, User
from lablease.store.uow import UnitOfWork
from lablease.worker.delivery import senders
from lablease.worker.loop import deliver_due, run_due

from .conftest import START, Lab
from .test_notices import Receiver

INTERNAL = [
    ("http://169.254.169.254/latest/meta-data/", "link-local"),
    ("http://127.0.0.1:8042/api/v1/systems", "loopback"),
    ("http://localhost:8042/", "loopback"),
    ("http://[::1]/hook", "loopback"),
    ("http://2130706433/hook", "loopback"),
    ("http://[::ffff:7f00:1]/hook", "loopback"),
    ("http://10.0.0.8/hook", "private"),
    ("http://[fd00::8]/hook", "unique-local"),
    ("http://239.1.1.1/hook", "multicast"),
    ("http://0.0.0.0:8042/", "unspecified"),
    ("https://user:pass@hooks.example.com/", "credentials"),
]


@pytest.fixture
def dns(monkeypatch):
    """A resolver the test controls: name -> address (anything else does not resolve)."""
    names = {}
    real = socket.getaddrinfo

    def getaddrinfo(host, port, *args, **kwargs):
        if host in names:
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (names[host], port))]
        if host in ("localhost",) or host[:1].isdigit() or ":" in host:
            return real(host, port, *args, **kwargs)
        raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return names


@pytest.mark.parametrize("url, why", INTERNAL)
def test_a_user_webhook_into_the_lab_is_refused_naming_why(lab, url, why):
    lab.alice.patch("/me", {"webhook_url": "https://hooks.example.com/alice"})
    status, problem = lab.alice.patch("/me", {"webhook_url": url, "email": "new@lab.test"})
    assert status == 422 and problem["detail"].startswith("webhook_url: ") and why in problem["detail"], problem
    with UnitOfWork(lab.db, write=False) as uow:  # nothing half-written: the mail address did not change either
        alice = uow.session.query(User).filter_by(name="alice").one()
        assert (alice.webhook_url, alice.email) == ("https://hooks.example.com/alice", None)
    status, problem = lab.alice.patch("/groups/team", {"webhook_url": url})
    assert status == 422 and why in problem["detail"]


@pytest.fixture
def lab(lab):
    lab.alice.post("/groups", {"name": "team"})
    return lab


def test_a_name_resolving_into_the_lab_is_refused(lab, dns):
    dns["hooks.example.com"] = "93.184.216.34"
    dns["intranet.example.com"] = "192.168.10.20"
    assert lab.alice.patch("/me", {"webhook_url": "https://hooks.example.com/x"})[0] == 200
    status, problem = lab.alice.patch("/me", {"webhook_url": "https://intranet.example.com/x"})
    assert status == 422
    assert problem["detail"] == ("webhook_url: intranet.example.com is or resolves to 192.168.10.20 is a private "
                                 "address, which webhooks may not reach (unless the site lists its network in "
                                 "webhook_allowed_networks)")


def test_the_site_allows_networks_explicitly(db, tmp_path):
    lab = Lab(db, Settings(data_dir=str(tmp_path / "data"), webhook_allowed_networks=("127.0.0.1/32",)))
    assert lab.alice.patch("/me", {"webhook_url": "http://127.0.0.1:9/hook"})[0] == 200
    assert lab.alice.patch("/me", {"webhook_url": "http://10.0.0.8/hook"})[0] == 422
    assert lab.alice.patch("/me", {"webhook_url": "http://u:p@127.0.0.1:9/hook"})[0] == 422


def _queued_notice(lab):
    """A reservation whose end warning is due: one webhook message in the outbox for alice."""
    lab.system()
    lab.alice.post("/reservations", {"system": "s1.lab.test", "duration": "2h"})
    run_due(lab.db, START + timedelta(hours=1), lab.settings)


def _outbox(lab):
    with UnitOfWork(lab.db, write=False) as uow:
        return [(row.status, row.last_error) for row in uow.session.query(Outbox).filter_by(channel="webhook")]


def test_the_sender_checks_the_address_again_when_dns_changed(db, tmp_path, dns):
    receiver = Receiver()
    try:
        lab = Lab(db, Settings(data_dir=str(tmp_path / "data"), outbox_max_attempts=1))
        port = receiver.server.server_address[1]
        dns["hooks.example.com"] = "93.184.216.34"
        assert lab.alice.patch("/me", {"webhook_url": f"http://hooks.example.com:{port}/hook"})[0] == 200
        _queued_notice(lab)
        dns["hooks.example.com"] = "127.0.0.1"  # rebound to the receiver on loopback, which is not allowed
        deliver_due(lab.db, START + timedelta(hours=1), lab.settings, senders(lab.settings))
        [(status, error)] = _outbox(lab)
        assert status == "failed" and "refused" in error and "127.0.0.1 is a loopback address" in error
        assert receiver.requests == []  # the receiver never heard of it
    finally:
        receiver.close()
