"""auth.*: logging in and out of the hub, and who is logged in.

A login opens a lablease web session (services/auth/signin.py) that the hub keeps in its /bkr cookie; the
password is checked as the web sign-in checks it (lablease's, else the site's directory's), the OAuth2
access token is one of the user's API tokens, and the Kerberos request (bkr's AUTH_METHOD = "krbv") is
checked with the server's keytab and mapped to a user as for `Authorization: Negotiate`
(services/auth/kerberos.py). Failed password logins count towards the same throttle as the web pages' sign-in.
"""
from __future__ import annotations

from ...domain.errors import DirectoryUnavailable, Invalid, LimitReached, Unauthenticated
from ...services.auth import kerberos, signin
from ...services.people.users import find_user
from ..call import Call
from ..registry import rest, xmlrpc


def refuse_proxy(proxy_user) -> None:
    if proxy_user:  # Beaker's proxy_auth permission has no counterpart in lablease
        raise Invalid("proxy_user", "lablease has no proxy authentication: log in as the user you act for")


@xmlrpc("auth.login_password", auth=False, writes=True)
def login_password(call: Call, username, password, proxy_user=None):
    refuse_proxy(proxy_user)
    name = str(username or "").strip()
    wait = call.signins.retry_after(name, call.client, call.now)
    if wait:  # too many failures for this name or from this address: not even checked (web/throttle.py)
        raise LimitReached(f"too many failed logins: try again in {-(-wait // 60)} minute(s)")
    try:
        call.new_session = signin.sign_in(call.uow, call.now, name, str(password or ""),
                                          call.settings.web_session_lifetime)
    except (Unauthenticated, DirectoryUnavailable):  # the directory's outage counts, as on the sign-in page
        call.signins.failed(name, call.client, call.now)
        raise
    call.signins.succeeded(name)
    return name


@xmlrpc("auth.login_oauth2", auth=False, writes=True)
def login_oauth2(call: Call, access_token, proxy_user=None):
    refuse_proxy(proxy_user)
    if not isinstance(access_token, str) or not access_token.strip():
        raise Invalid("access_token", "send one of your lablease API tokens")
    call.new_session = signin.token_session(call.uow, call.now, access_token, call.settings.web_session_lifetime)
    return signin.session_actor(call.uow, call.new_session, call.now).name


@xmlrpc("auth.login_krbv", auth=False, writes=True)
def login_krbv(call: Call, krb_request, proxy_user=None):
    """bkr's Kerberos login: a bare KRB_AP_REQ for the hub's HTTP/<host> principal, base64."""
    refuse_proxy(proxy_user)
    call.new_session, name = kerberos.beaker_session(call.uow, call.now, krb_request,
                                                     call.settings.web_session_lifetime)
    return name


@xmlrpc("auth.logout", auth=False, writes=True)
def logout(call: Call):
    signin.sign_out(call.uow, call.now, call.session_secret)
    call.new_session = ""  # the cookie is cleared
    return True


@xmlrpc("auth.renew_session", auth=False)
def renew_session(call: Call, *args):
    """Kobo's old client calls it before logging in: True means "log in again"."""
    return call.actor is None


def who(call: Call) -> dict:
    user = find_user(call.uow, call.user.name)
    return {"username": user.name, "email_address": user.email or ""}


@xmlrpc("auth.who_am_i")
def who_am_i(call: Call):
    return who(call)


@rest("GET", "/users/+self")
def self_user(call: Call):
    """What `bkr whoami` reads: Beaker's user document, in the fields lablease has."""
    user = find_user(call.uow, call.user.name)
    return {"id": user.id, "user_name": user.name, "display_name": user.name, "email_address": user.email or "",
            "disabled": bool(user.disabled), "is_admin": call.user.is_admin}
