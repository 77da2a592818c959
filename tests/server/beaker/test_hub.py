"""The hub at /bkr: logging in with the real bkr, the session cookie's life, hardened XML-RPC, one-line faults."""
from __future__ import annotations

import json
import xmlrpc.client

import requests

from tests.server.beaker.conftest import PASSWORD


def login(hub, name: str = "alice", password: str = PASSWORD) -> requests.Session:
    """A client that logged in with auth.login_password, as bkr does, holding the /bkr session cookie."""
    session = requests.Session()
    answer = rpc(session, hub, "auth.login_password", name, password, None)
    assert answer == name, answer
    return session


def rpc(session: requests.Session, hub, method: str, *params, path: str = "/bkr/client/"):
    """The method's answer, or the Fault it raised (returned, not raised)."""
    body = xmlrpc.client.dumps(params, method, allow_none=True)
    response = session.post(hub.server.url + path, data=body, headers={"Content-Type": "text/xml"}, timeout=30)
    assert response.status_code == 200, response.text
    try:
        return xmlrpc.client.loads(response.content, use_builtin_types=True)[0][0]
    except xmlrpc.client.Fault as fault:
        return fault


def test_bkr_whoami_logs_in_with_the_lablease_password(hub):
    said = json.loads(hub.bkr("alice").ok("whoami"))
    assert said["username"] == "alice"
    assert hub.api("alice").get("/me").json()["name"] == said["username"]


def test_a_wrong_password_is_one_line_and_no_session(hub):
    error = hub.bkr("alice", "not the password").fails("whoami")
    assert error.strip() == "XML-RPC fault: unknown user name or wrong password"
    fault = rpc(requests.Session(), hub, "auth.login_password", "alice", "wrong one", None)
    assert isinstance(fault, xmlrpc.client.Fault) and fault.faultCode == 1


def test_the_session_cookie_is_the_hubs_own_and_ends_with_logout(hub):
    session = login(hub)
    cookie = next(c for c in session.cookies if c.name == "lablease_bkr_session")
    # Path=/: bkr's XML-RPC transport sends only cookies that match the server's root URL
    assert cookie.path == "/" and cookie.has_nonstandard_attr("HttpOnly")
    # the pages and /api/v1 never take it for a sign-in
    assert session.get(hub.server.url + "/api/v1/me").status_code == 401
    assert rpc(session, hub, "auth.who_am_i")["username"] == "alice"
    assert rpc(session, hub, "auth.logout") is True
    session.cookies.set("lablease_bkr_session", cookie.value, path="/")  # a copy kept by someone else
    fault = rpc(session, hub, "auth.who_am_i")
    assert isinstance(fault, xmlrpc.client.Fault) and "session has ended" in fault.faultString


def test_revoking_tokens_and_disabling_the_user_end_the_session(hub):
    hub.user("carol")
    session = login(hub, "carol")
    hub.server.admin_cli("token", "revoke", "carol")
    assert "session has ended" in rpc(session, hub, "auth.who_am_i").faultString
    session = login(hub, "carol")
    hub.server.admin_cli("user", "disable", "carol")
    assert "session has ended" in rpc(session, hub, "auth.who_am_i").faultString
    assert rpc(requests.Session(), hub, "auth.login_password", "carol", PASSWORD, None).faultString == \
        "unknown user name or wrong password"


def test_oauth2_login_takes_a_lablease_api_token(hub):
    session = requests.Session()
    assert rpc(session, hub, "auth.login_oauth2", hub.server.tokens["bob"]) == "bob"
    assert rpc(session, hub, "auth.who_am_i", path="/bkr/RPC2")["username"] == "bob"
    assert isinstance(rpc(requests.Session(), hub, "auth.login_oauth2", "not-a-token"), xmlrpc.client.Fault)


def test_a_krbv_login_on_a_hub_without_a_keytab_says_so_in_one_line(hub):
    fault = rpc(requests.Session(), hub, "auth.login_krbv", "YWJj\n", None)  # bkr's request, base64 with a newline
    assert fault.faultString == ("this server takes no Kerberos login (kerberos_keytab is not set): log in with a "
                                 "password or an API token")


def test_xmlrpc_bodies_are_hardened_like_job_xml(hub):
    url = hub.server.url + "/bkr/client/"
    bomb = ('<?xml version="1.0"?><!DOCTYPE m [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;">]>'
            '<methodCall><methodName>auth.who_am_i</methodName><params><param><value>&b;</value></param>'
            '</params></methodCall>')
    deep = ("<methodCall><methodName>x</methodName><params><param><value>" + "<array><data><value>" * 40
            + "</value></data></array>" * 40 + "</value></param></params></methodCall>")
    for body, said in ((bomb, "DOCTYPE is not allowed"), (deep, "too deeply nested"),
                       ("x" * (2 * 1024 * 1024), "limit"), ("<methodCall><oops", "not well-formed")):
        response = requests.post(url, data=body, headers={"Content-Type": "text/xml"}, timeout=30)
        assert response.status_code == 200
        try:
            xmlrpc.client.loads(response.content)
            raise AssertionError("accepted")
        except xmlrpc.client.Fault as fault:
            assert said in fault.faultString and "\n" not in fault.faultString and "Traceback" not in fault.faultString


def test_cookie_writes_need_a_json_or_xmlrpc_content_type(hub):
    session = login(hub)
    form = {"Content-Type": "application/x-www-form-urlencoded"}
    response = session.post(hub.server.url + "/bkr/client/", data="<methodCall/>", headers=form)
    assert "text/xml" in xmlrpc_fault(response)
    response = session.post(hub.server.url + "/bkr/pools/", data="name=forged", headers=form)
    assert response.status_code == 422 and "application/json" in response.text
    assert hub.api().get("/pools/forged").status_code == 404


def test_unknown_methods_and_paths_say_so_in_one_line(hub):
    session = login(hub)
    fault = rpc(session, hub, "tasks.upload", "task.rpm", "")  # bkr task-add: lablease has no task library
    assert fault.faultString.startswith("tasks.upload is not supported by this lablease hub")
    fault = rpc(session, hub, "auth.who_am_i", "extra")
    assert "auth.who_am_i() was sent 1 parameter(s)" in fault.faultString
    response = session.get(hub.server.url + "/bkr/no/such/thing")
    assert response.status_code == 404 and response.headers["Content-Type"].startswith("text/plain")
    assert hub.api().get("/health").status_code == 200  # the API and the pages stay where they were


def xmlrpc_fault(response) -> str:
    try:
        xmlrpc.client.loads(response.content)
    except xmlrpc.client.Fault as fault:
        return fault.faultString
    raise AssertionError(response.text)
