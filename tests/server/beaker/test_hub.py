"""The hub at /bkr: logging in with the real bkr, the session cookie's life, hardened XML-RPC, one-line faults."""
from __future__ import annotations

import json
import xmlrpc.client

import pytest
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


def test_rest_bodies_of_the_wrong_shape_are_a_422_naming_the_field(hub):
    """Beaker's REST bodies are JSON objects whose fields have a type: a list, or a number where a name goes,
    is the caller's mistake (422 saying which field, as /api/v1 answers a body its schema refuses), never a 500
    from inside a method; nothing is written."""
    session = login(hub)
    hub.add_system("shape1.bkr.test", condition="manual")
    url = hub.server.url + "/bkr"
    for path, body, expected in (
            ("/systems/shape1.bkr.test/commands", ["on"], "body: send a JSON object"),
            ("/systems/shape1.bkr.test/loans", {"recipient": 5}, "recipient: must be text, not a number"),
            ("/systems/shape1.bkr.test/commands", {"action": "on", "only_if_current_user_matches": "yes"},
             "only_if_current_user_matches: must be true or false, not text"),
            ("/pools/", {"name": "shape-pool", "owner": ["admin"]}, "owner: send a JSON object"),
            ("/recipes/1/watchdog", {"kill_time": True}, "kill_time: must be a whole number or a number, not true "
                                                         "or false")):
        response = session.post(url + path, json=body, timeout=30)
        assert (response.status_code, response.headers["Content-Type"]) == (422, "text/plain; charset=utf-8"), \
            (path, response.text)
        assert response.text == expected + "\n", path
    assert hub.api().get("/systems/shape1.bkr.test/loan").status_code == 404
    assert hub.api().get("/systems/shape1.bkr.test/commands").json() == []
    assert hub.api().get("/pools/shape-pool").status_code == 404


def test_a_database_outage_is_a_503_with_retry_after_on_rest_and_a_fault_on_xmlrpc(tmp_path):
    """On PostgreSQL of its own (this test stops it): while the database is down, Beaker's REST paths answer
    503 with Retry-After, one line, as the API does; XML-RPC answers a Fault saying so; once it is back the
    same session works again."""
    from tests.support.live import LiveServer
    from tests.support.postgres import ThrowawayPostgres, find_bindir

    if find_bindir() is None:
        pytest.skip("PostgreSQL binaries not installed (run scripts/ensure-postgresql.sh)")
    postgres = ThrowawayPostgres().start()
    server = None
    try:
        server = LiveServer(tmp_path / "data", postgres.create_database("hub"), run_worker=False).start()
        server.admin_cli("user", "passwd", "admin", stdin=PASSWORD + "\n")
        session = requests.Session()
        body = xmlrpc.client.dumps(("admin", PASSWORD, None), "auth.login_password", allow_none=True)
        assert session.post(server.url + "/bkr/client/", data=body, headers={"Content-Type": "text/xml"},
                            timeout=30).status_code == 200
        assert session.get(server.url + "/bkr/users/+self", timeout=30).json()["user_name"] == "admin"
        postgres.stop_server("fast")
        try:
            response = session.get(server.url + "/bkr/users/+self", timeout=30)
            assert response.status_code == 503 and int(response.headers["Retry-After"]) > 0
            assert response.text.startswith("Database unavailable: ") and response.text.count("\n") == 1
            call = xmlrpc.client.dumps((), "auth.who_am_i", allow_none=True)
            fault = xmlrpc_fault(session.post(server.url + "/bkr/client/", data=call,
                                              headers={"Content-Type": "text/xml"}, timeout=30))
            assert fault.startswith("Database unavailable: ")
        finally:
            postgres.start_server()
        assert session.get(server.url + "/bkr/users/+self", timeout=30).json()["user_name"] == "admin"
    finally:
        if server is not None:
            server.stop()
        postgres.stop()
