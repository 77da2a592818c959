"""Signing in and out, sessions, CSRF, REMOTE_USER, and the headers every page carries."""
import io
import re
import sys

import pytest
from argon2 import PasswordHasher
from sqlalchemy import select
from werkzeug.test import Client

from lablease.api import create_app
from lablease.config import Settings
from lablease.domain.errors import Invalid
from lablease.services.auth import signin
from lablease.cli import server as server_cli
from lablease.store.tables import Token, User
from lablease.store.uow import UnitOfWork
from tests.server.web.conftest import PASSWORD, Person, give_password


def test_a_page_asks_for_sign_in_and_comes_back_after_it(web, person):
    alice = person("alice", signed_in=False)
    response = alice.get("/systems?group=pool")
    assert response.status_code == 303 and response.headers["Location"] == "/login?next=/systems%3Fgroup%3Dpool"
    form = alice.page(response.headers["Location"])
    assert 'name="username"' in form and 'name="password"' in form and 'name="csrf"' in form
    signed = alice.post("/login", {"username": "alice", "password": PASSWORD, "next": "/systems?group=pool"})
    assert signed.status_code == 303 and signed.headers["Location"] == "/systems?group=pool"
    cookie = signed.headers["Set-Cookie"]
    assert cookie.startswith("lablease_session=") and "HttpOnly" in cookie and "SameSite=Lax" in cookie
    assert "Secure" not in cookie  # plain http here; https below
    assert "alice" in alice.follow(signed)


def test_a_wrong_password_or_name_is_refused_alike_and_no_open_redirect(web, person):
    mallory = person("alice", signed_in=False)
    mallory.get("/login")
    for name, password in (("alice", "wrong password"), ("nobody", PASSWORD)):
        response = mallory.post("/login", {"username": name, "password": password})
        assert response.status_code == 401
        assert "unknown user name or wrong password" in response.get_data(as_text=True)
    assert mallory.get("/systems").status_code == 303  # still not signed in
    away = mallory.post("/login", {"username": "alice", "password": PASSWORD, "next": "//evil.example/x"})
    assert away.headers["Location"] == "/systems"


def test_sign_out_ends_the_session_on_the_server(web, person):
    alice = person("alice")
    stolen = alice.client.get_cookie("lablease_session").value
    alice.page("/systems")
    out = alice.post("/logout")
    assert out.status_code == 303 and "lablease_session=;" in out.headers["Set-Cookie"]
    assert "You are signed out." in alice.follow(out)
    replay = Person(web, "mallory")
    replay.client.set_cookie("lablease_session", stolen)
    assert replay.get("/systems").status_code == 303  # the old cookie opens nothing any more


def test_a_forged_form_post_is_refused_and_changes_nothing(web, person):
    web.system("s1.lab.test")
    alice = person("alice")
    alice.page("/systems/s1.lab.test")
    for forged in (None, "0" * 64, Person(web, "bob").csrf or "x"):
        response = alice.post("/systems/s1.lab.test/take", {"duration": "1h"}, csrf=forged)
        assert response.status_code == 403
        assert "was not sent from lablease" in response.get_data(as_text=True)
    assert web.alice.get("/reservations", user="me")[1] == []
    # the same post with the page's token works
    assert alice.post("/systems/s1.lab.test/take", {"duration": "1h"}).status_code == 303


def test_a_changed_password_replaces_the_old_one_and_a_short_one_is_refused(web, person, db):
    give_password(web, "bob")
    give_password(web, "bob", "a new password")
    assert person("bob", signed_in=False).sign_in().status_code == 401
    assert person("bob", signed_in=False).sign_in("a new password").status_code == 303
    with UnitOfWork(db) as uow, pytest.raises(Invalid, match="at least 8 characters"):
        signin.set_password(uow, web.clock(), "bob", "short")


def test_lablease_server_user_passwd_reads_a_pipe(web, person, monkeypatch, capsys):
    monkeypatch.setenv("LABLEASE_DATABASE_URL", web.db.url)
    monkeypatch.setenv("LABLEASE_DATA_DIR", web.settings.data_dir)
    monkeypatch.setattr(sys, "stdin", io.StringIO("bob's new password\n"))
    assert server_cli.main(["user", "passwd", "bob"]) in (0, None)
    web.passwords.add("bob")  # set by the command
    assert person("bob", signed_in=False).sign_in("bob's new password").status_code == 303
    with web.db.reader.connect() as connection:  # stored as an argon2id hash (memory-hard), never the password
        [stored] = connection.exec_driver_sql(
            "SELECT password_hash FROM web_logins JOIN users ON users.id = web_logins.user_id "
            "WHERE users.name = 'bob'").scalars()
    assert stored.startswith("$argon2id$") and "new password" not in stored
    assert PasswordHasher().verify(stored, "bob's new password")
    monkeypatch.setattr(sys, "stdin", io.StringIO("short\n"))
    assert server_cli.main(["user", "passwd", "bob"]) not in (0, None)
    assert "at least 8 characters" in capsys.readouterr().err


def test_remote_user_is_trusted_only_when_the_setting_says_so(web, tmp_path):
    response = web.client.get("/systems", environ_base={"REMOTE_USER": "alice"})
    assert response.status_code == 303  # off by default: the variable names nobody
    trusting = Client(create_app(Settings(data_dir=str(tmp_path / "b"), web_trust_remote_user=True), web.db, web.clock))
    page = trusting.get("/systems", environ_base={"REMOTE_USER": "alice"})
    assert page.status_code == 200 and '<span class="who">alice</span>' in page.get_data(as_text=True)
    assert trusting.get("/systems", environ_base={"REMOTE_USER": "nobody"}).status_code == 303



def test_remote_user_comes_only_from_the_front_proxy_never_from_a_request_header(web, tmp_path):
    """A client can send a `Remote-User` header (HTTP_REMOTE_USER): only the proxy's REMOTE_USER counts, and only
    when trusted; a user the proxy names but lablease has disabled stays out."""
    assert web.client.get("/systems", headers={"Remote-User": "alice"}).status_code == 303  # off: ignored
    trusting = Client(create_app(Settings(data_dir=str(tmp_path / "b"), web_trust_remote_user=True), web.db, web.clock))
    assert trusting.get("/systems", headers={"Remote-User": "alice"}).status_code == 303  # on: still not a header
    assert trusting.get("/systems", environ_base={"REMOTE_USER": "alice"}).status_code == 200
    with UnitOfWork(web.db) as uow:
        uow.session.execute(select(User).where(User.name == "alice")).scalar_one().disabled = True
        uow.commit()
    assert trusting.get("/systems", environ_base={"REMOTE_USER": "alice"}).status_code == 303

def test_every_page_carries_the_csp_and_api_paths_are_untouched(web, person):
    alice = person("alice")
    response = alice.get("/systems")
    assert "script-src 'self'" in response.headers["Content-Security-Policy"]
    assert response.headers["X-Frame-Options"] == "DENY" and response.headers["Cache-Control"] == "no-store"
    assert "<script" not in response.get_data(as_text=True) and "style=" not in response.get_data(as_text=True)
    assert alice.get("/static/lablease.css").status_code == 200
    assert alice.get("/favicon.ico").mimetype == "image/svg+xml"
    missing = alice.get("/api/v1/nothing-here")
    assert missing.status_code == 404 and missing.mimetype == "application/problem+json"


def test_cookies_are_secure_under_https(web, person):
    give_password(web, "alice")
    alice = Person(web, "alice")
    form = alice.client.get("/login", base_url="https://lab.example")
    assert "Secure" in form.headers["Set-Cookie"]  # the pre-session cookie too
    token = re.search(r'name="csrf" value="([0-9a-f]+)"', form.get_data(as_text=True)).group(1)
    response = alice.client.post("/login", base_url="https://lab.example",
                                 data={"username": "alice", "password": PASSWORD, "csrf": token})
    assert response.status_code == 303 and "Secure" in response.headers["Set-Cookie"]


def test_ended_sessions_are_cleared_at_the_next_sign_in(web, person):
    alice = person("alice")
    person("alice")  # a second browser: a session left open
    alice.post("/logout")  # the first one is revoked
    web.clock.advance(hours=13)  # past web_session_lifetime: the open one has expired
    person("alice")
    person("alice")
    with UnitOfWork(web.db) as uow:
        names = uow.session.execute(select(Token.name, Token.revoked_at, Token.expires_at).join(User).where(
            User.name == "alice")).all()
    sessions = [row for row in names if row.name == signin.SESSION_TOKEN]
    assert len(sessions) == 2 and all(row.revoked_at is None for row in sessions)
    assert [row.name for row in names if row.name != signin.SESSION_TOKEN] == ["default"]  # the API token stays


def test_failed_sign_ins_are_limited_per_user_name_and_per_client_address(web, person):
    from datetime import timedelta

    from lablease.web import throttle

    person("alice", signed_in=False), person("bob", signed_in=False)  # their passwords
    assert web.app.web.signins.limits == {"name": 5, "address": 20}  # the site's limits (docs/web.md), in 15 min
    assert throttle.WINDOW == timedelta(minutes=15)
    limits = throttle.FailedSignIns(per_name=2, per_address=4)  # the same, smaller: fewer hashes to pay
    web.app.web.signins = limits

    def attempt(name: str, password: str, address: str):
        browser = Person(web, name)
        browser.get("/login", environ_base={"REMOTE_ADDR": address})
        return browser.client.post("/login", data={"username": name, "password": password, "csrf": browser.csrf},
                                   environ_base={"REMOTE_ADDR": address})

    for _ in range(limits.limits["name"]):
        assert attempt("alice", "wrong password", "192.0.2.1").status_code == 401
    for address in ("192.0.2.1", "198.51.100.7"):  # her name is held from everywhere, even with her password
        held = attempt("Alice", PASSWORD, address)
        assert held.status_code == 429 and 0 < int(held.headers["Retry-After"]) <= 15 * 60
        assert "Too many failed sign-ins: try again in 15 minute(s)." in held.get_data(as_text=True)
    assert attempt("bob", PASSWORD, "192.0.2.1").status_code == 303  # another name from that address: fine
    for n in range(limits.limits["address"] - limits.limits["name"]):  # guessing many names from one address
        assert attempt(f"guess{n}", "wrong password", "192.0.2.1").status_code == 401
    assert attempt("bob", PASSWORD, "192.0.2.1").status_code == 429
    assert attempt("bob", PASSWORD, "198.51.100.7").status_code == 303  # from elsewhere bob still signs in
    web.clock.now = web.clock.now + timedelta(minutes=15)  # the window passed: both may try again
    assert attempt("alice", PASSWORD, "192.0.2.1").status_code == 303
