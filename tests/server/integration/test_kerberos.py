"""Kerberos sign-in against a real MIT KDC, through a real server: the CLI with a kinit ticket (SPNEGO), the pages,
the real `bkr` with AUTH_METHOD = "krbv" (auth.login_krbv), and the tokens the server must refuse (another
service's ticket, an expired one, a replayed or forged one, an unknown person).

One KDC and one server for the module (tests/support/kerberos.py); this process and the server use the KDC's
throw-away krb5.conf, each person their own credentials cache.
"""
import base64
import io
import time
import xmlrpc.client

import gssapi
import pytest
import requests
from requests_gssapi import HTTPSPNEGOAuth

from lablease.cli.client import main
from tests.support.bkr import Bkr
from tests.support.directory import GROUPS, PEOPLE as PEOPLE_BASE, person_ldif, start_slapd
from tests.support.kerberos import REALM, start_kdc
from tests.support.live import LiveServer

PEOPLE = {"alice": "alice's kerberos password", "nobody": "nobody's kerberos password",
          "dora": "dora's kerberos password", "erin": "erin's kerberos password"}
# The site's directory: dora and erin (Kerberos principals too) and carol (a password only), in the group racks
DIRECTORY = (person_ldif("dora", "dora's directory password", "Dora Lee", "dora@example.test")
             + person_ldif("erin", "erin's directory password", "Erin Cole", "erin@example.test")
             + person_ldif("carol", "carol's directory password", "Carol Jones", "carol@example.test")
             + f"dn: cn=racks,{GROUPS}\nobjectClass: groupOfNames\ncn: racks\nmember: uid=dora,{PEOPLE_BASE}\n"
               f"member: uid=carol,{PEOPLE_BASE}\n\n")
SPNEGO = gssapi.OID.from_int_seq("1.3.6.1.5.5.2")


@pytest.fixture(scope="module")
def kdc(tmp_path_factory):
    kdc = start_kdc(tmp_path_factory, PEOPLE)
    with pytest.MonkeyPatch.context() as patch:  # this process's GSS-API reads the throw-away realm's files
        patch.setenv("KRB5_CONFIG", kdc.env["KRB5_CONFIG"])
        patch.setenv("KRB5CCNAME", f"FILE:{kdc.root}/no-ticket")
        yield kdc
    kdc.stop()


@pytest.fixture(scope="module")
def slapd(tmp_path_factory):
    server = start_slapd(tmp_path_factory, DIRECTORY)
    yield server
    server.stop()


@pytest.fixture(scope="module")
def server(kdc, slapd, tmp_path_factory):
    live = LiveServer(tmp_path_factory.mktemp("kerberos"), run_worker=False,
                      settings={"kerberos_keytab": str(kdc.keytab), **slapd.settings()})
    live.env.update(KRB5_CONFIG=kdc.env["KRB5_CONFIG"], KRB5RCACHEDIR=kdc.env["KRB5RCACHEDIR"])
    live.start()
    live.add_user("alice")
    for fqdn in ("k1.lab.test", "k2.lab.test"):
        response = live.admin.post("/systems", json={"fqdn": fqdn, "arch": "x86_64", "condition": "manual"})
        assert response.status_code == 201, response.text
    try:
        yield live
    finally:
        live.stop()


def ticket(kdc, monkeypatch, name: str, lifetime: str = "10m") -> None:
    """kinit as `name`: this process's requests use their ticket from now on."""
    monkeypatch.setenv("KRB5CCNAME", kdc.kinit(name, PEOPLE[name], lifetime)["KRB5CCNAME"])


def token_for(service: str) -> str:
    """A Negotiate token for `service` (HTTP@host) from the current ticket, as a browser or the CLI makes one."""
    name = gssapi.Name(service, gssapi.NameType.hostbased_service)
    return base64.b64encode(gssapi.SecurityContext(name=name, usage="initiate", mech=SPNEGO).step()).decode()


def cli(server, *argv: str):
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), env={"LABLEASE_URL": server.url}, stdout=out, stderr=err)  # no token: Kerberos
    return code, out.getvalue(), err.getvalue()


def test_the_cli_signs_in_with_a_kinit_ticket_and_without_one_says_how(kdc, server, monkeypatch):
    code, out, err = cli(server, "whoami")
    assert code != 0 and "kinit" in err and "Traceback" not in err  # no ticket: one line saying how to sign in
    ticket(kdc, monkeypatch, "alice")
    code, out, err = cli(server, "whoami", "--json")
    assert (code, err) == (0, "") and '"name": "alice"' in out
    code, out, err = cli(server, "reserve", "k1.lab.test", "--duration", "1h")  # a POST: its body sent again
    assert (code, err) == (0, ""), err
    assert server.admin.get("/systems/k1.lab.test").json()["reservation"]["user"] == "alice"


def test_the_pages_challenge_and_a_ticket_opens_a_web_session(kdc, server, monkeypatch):
    plain = requests.get(server.url + "/systems", allow_redirects=False, timeout=30)
    assert plain.status_code == 401 and plain.headers["WWW-Authenticate"] == "Negotiate"
    assert 'url=/login?next=/systems"' in plain.text  # a browser without a ticket goes on to the form
    ticket(kdc, monkeypatch, "alice")
    browser = requests.Session()
    page = browser.get(server.url + "/systems", auth=HTTPSPNEGOAuth(), timeout=30)
    assert page.status_code == 200 and "alice" in page.text
    again = browser.get(server.url + "/reservations", timeout=30)  # the session cookie alone now
    assert again.status_code == 200 and "alice" in again.text


def test_a_directory_person_is_made_a_user_by_their_first_ticket_or_bkr_password_login(kdc, server, monkeypatch,
                                                                                   tmp_path):
    ticket(kdc, monkeypatch, "dora")  # in the KDC and the directory, never added to lablease by hand
    code, out, err = cli(server, "whoami", "--json")
    assert (code, err) == (0, "") and '"name": "dora"' in out and '"racks"' in out
    # Beaker's client logs in with auth.login_password: lablease's one password check, so the directory's
    bkr = Bkr(server, tmp_path, "carol", "carol's directory password")
    assert "carol" in bkr.ok("whoami")
    assert "wrong password" in Bkr(server, tmp_path, "carol", "not her password").fails("whoami")


def refused(server, token: str) -> str:
    response = requests.get(server.url + "/api/v1/me", headers={"Authorization": f"Negotiate {token}"}, timeout=30)
    assert response.status_code == 401, response.text
    assert "Negotiate" in response.headers["WWW-Authenticate"]  # offered again, besides Bearer
    return response.json()["detail"]


def test_another_services_ticket_an_expired_ticket_a_forged_token_and_an_unknown_person_are_refused(
        kdc, server, monkeypatch):
    ticket(kdc, monkeypatch, "alice")
    assert "not found in keytab" in refused(server, token_for("HTTP@another.service.test"))
    assert "Invalid token" in refused(server, base64.b64encode(b"\x60\x82\x01\x00" + bytes(252)).decode())
    assert refused(server, "not base64!") == "the Negotiate token is not base64"
    page = requests.get(server.url + "/systems", headers={"Authorization": "Negotiate Zm9yZ2Vk"}, timeout=30)
    assert page.status_code == 401 and "the Kerberos ticket was refused" in page.text
    assert "lablease_session" not in page.headers.get("Set-Cookie", "")  # no session for a refused token
    ticket(kdc, monkeypatch, "nobody")
    assert refused(server, token_for("HTTP@127.0.0.1")) == (
        f"Kerberos principal nobody@{REALM} is user nobody, whom lablease does not know")
    ticket(kdc, monkeypatch, "alice", lifetime="2s")
    token = token_for("HTTP@127.0.0.1")  # made while the ticket is valid, sent once it is not
    request = krbv_request(kdc.service)  # bkr's, likewise
    time.sleep(3.5)  # past its end and the realm's 1 s clock skew (krb5.conf clockskew)
    # MIT's acceptor checks the token's time and the ticket's end in an order of its own: either is the refusal
    expired = {"the Kerberos ticket was refused: Ticket expired",
               "the Kerberos ticket was refused: Clock skew too great"}
    assert refused(server, token) in expired
    assert krbv_login(server, request).faultString in expired


def krbv_request(service: str) -> str:
    """What bkr sends to auth.login_krbv (bkr/common/hub.py, _login_krbv): the first token of a DCE-style
    context, a bare KRB_AP_REQ, for `service` (HTTP/host@REALM), from the current ticket, base64 with line breaks."""
    flags = (gssapi.RequirementFlag.out_of_sequence_detection | gssapi.RequirementFlag.replay_detection
             | gssapi.RequirementFlag.mutual_authentication | gssapi.RequirementFlag.dce_style)
    token = gssapi.raw.init_sec_context(gssapi.Name(service), gssapi.Credentials(usage="initiate"), flags=flags).token
    return base64.encodebytes(token).decode()


def krbv_login(server, request: str, proxy_user=None):
    """auth.login_krbv's answer, or its Fault (returned)."""
    try:
        with xmlrpc.client.ServerProxy(server.url + "/bkr/client/", allow_none=True) as hub:
            return hub.auth.login_krbv(request, proxy_user)
    except xmlrpc.client.Fault as fault:
        return fault


def test_bkr_logs_in_with_krbv_and_a_kinit_ticket(kdc, server, tmp_path):
    alice = Bkr(server, tmp_path, "alice", realm=REALM, env=kdc.kinit("alice", PEOPLE["alice"]))
    assert "alice" in alice.ok("whoami")
    alice.ok("system-reserve", "k2.lab.test")  # a write, in the session the login opened
    assert server.admin.get("/systems/k2.lab.test").json()["reservation"]["user"] == "alice"
    # erin is in the KDC and the directory only: her first krbv login makes her a user, with the directory's groups
    erin = Bkr(server, tmp_path, "erin", realm=REALM, env=kdc.kinit("erin", PEOPLE["erin"]))
    assert '"erin@example.test"' in erin.ok("whoami")  # her mail, from the directory


def test_krbv_refuses_another_service_a_replay_a_forgery_and_proxy_users(kdc, server, monkeypatch):
    ticket(kdc, monkeypatch, "alice")
    request = krbv_request(kdc.service)
    assert "not found in keytab" in krbv_login(server, krbv_request(f"HTTP/another.service.test@{REALM}")).faultString
    assert "proxy" in krbv_login(server, request, "dora").faultString  # refused before the request is read
    assert krbv_login(server, request) == "alice"
    assert krbv_login(server, request).faultString == "the Kerberos ticket was refused: Request is a replay"
    forged = bytearray(base64.b64decode(krbv_request(kdc.service)))
    forged[-10] ^= 0xFF  # the authenticator, encrypted with the ticket's session key
    assert krbv_login(server, base64.b64encode(forged).decode()).faultString == (
        "the Kerberos ticket was refused: Decrypt integrity check failed")
    assert krbv_login(server, token_for("HTTP@127.0.0.1")).faultString == (  # SPNEGO, not a bare AP-REQ
        "the Kerberos ticket was refused: Invalid message type")
    assert krbv_login(server, "not base64!").faultString == "the Kerberos request is not base64"
    ticket(kdc, monkeypatch, "nobody")
    assert krbv_login(server, krbv_request(kdc.service)).faultString == (
        f"Kerberos principal nobody@{REALM} is user nobody, whom lablease does not know")
