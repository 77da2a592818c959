"""Web sign-in: passwords (argon2id), web sessions, trusted REMOTE_USER, and each user's calendar-feed secret.

A web session is an API token of the user (tokens table, name `web session`) with an expiry: signing out
revokes it, `lablease-server token revoke USER` ends every session too, and a disabled user is refused by the
same check as for the API (users.authenticate). Server-side rather than a signed cookie, so that a
sign-out or a revocation takes effect at once.
"""
from __future__ import annotations

import functools
import secrets
from datetime import datetime, timedelta, timezone

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError
from sqlalchemy import delete, or_, select

from ...domain.errors import Unauthenticated
from ...domain.permissions import Actor
from ...domain.signin import check_new_password
from ...store.tables import Token, User, WebLogin
from ..people.users import actor_for, authenticate, create_token, find_user, hash_token, is_name
from ..people.verified_passwords import VerifiedPasswords
from ..records import activity
from . import directory

SESSION_TOKEN = "web session"
_HASHER = PasswordHasher()  # argon2id with the library's current defaults (RFC 9106's second recommendation)
_VERIFIED = VerifiedPasswords()  # this process's (services/people/verified_passwords.py)


@functools.cache
def dummy_hash() -> str:
    """What an unknown name's password is checked against, so it costs as much time as a wrong password.
    Made once per process, when the web application is built (web/app.py), not at import: an argon2
    hash costs a quarter of a CPU second, and every tool importing this module would pay it."""
    return _HASHER.hash("not a password of anybody")


def _login(uow, user_id: int) -> WebLogin:
    session = uow.session
    login = session.get(WebLogin, user_id)
    if login is None:
        login = WebLogin(user_id=user_id)
        session.add(login)
    return login


def set_password(uow, now: datetime, name: str, password: str) -> None:
    user = find_user(uow, name)
    _login(uow, user.id).password_hash = _HASHER.hash(check_new_password(password))
    activity.record(uow, None, now, "user", name, "changed", "password", None, "set")


def check_password(uow, name: str, password: str, now: datetime | None = None) -> User:
    """The user if the password is theirs; Unauthenticated with one message for every failure.

    The one password check of every way in (the web form, Beaker's auth.login_password...): a user with a
    password set in lablease is checked against it only; anyone else, when the site has a directory
    (`ldap_url`), against the directory's, and made a user on their first sign-in (services/auth/directory.py).
    A directory that does not answer is DirectoryUnavailable (503), so local users still sign in."""
    session = uow.session
    if not is_name(name):  # no user has it (nor a directory filter or PostgreSQL text a NUL): not even looked up
        raise Unauthenticated("unknown user name or wrong password")
    user = session.execute(select(User).where(User.name == name)).scalar_one_or_none()
    login = session.get(WebLogin, user.id) if user is not None else None
    stored = login.password_hash if login is not None else None
    settings = uow.settings
    if stored is None and directory.configured(settings):
        return _directory_sign_in(uow, name, password, now or datetime.now(timezone.utc))
    lifetime = settings.password_cache_seconds
    if stored is None or not _VERIFIED.knows(user.id, stored, password, lifetime):
        try:
            _HASHER.verify(stored or dummy_hash(), password)
        except (VerificationError, InvalidHashError):
            stored = None
        if stored is not None:
            _VERIFIED.remember(user.id, stored, password, lifetime)
    if user is None or stored is None or user.disabled:
        raise Unauthenticated("unknown user name or wrong password")
    if _HASHER.check_needs_rehash(stored):  # the library's defaults grew: upgrade on the next success
        login.password_hash = _HASHER.hash(password)
    return user


def _directory_sign_in(uow, name: str, password: str, now: datetime) -> User:
    # The directory may take up to ldap_timeout: a transaction that has only read so far is ended first,
    # so that no database lock (SQLite's writer) is held while it answers.
    session, settings = uow.session, uow.settings
    if not (session.new or session.dirty or session.deleted):
        session.rollback()
    person = directory.Directory(settings).sign_in(name, password)
    return directory.admit(uow, now, person)


def sign_in(uow, now: datetime, name: str, password: str, lifetime: timedelta) -> str:
    """Check the password and open a web session; returns the session's secret (the cookie's value)."""
    return open_session(uow, now, check_password(uow, name, password, now), lifetime)


def open_session(uow, now: datetime, user: User, lifetime: timedelta, ends: datetime | None = None) -> str:
    """A new session of a user who proved who they are (a password, Kerberos, or an API token for Beaker's
    auth.login_oauth2): its secret. It ends after `lifetime`, or at `ends` when that is sooner."""
    # The user's ended sessions go (each sign-in adds one; the tokens table must not grow without end)
    uow.session.execute(delete(Token).where(Token.user_id == user.id, Token.name == SESSION_TOKEN,
                                            or_(Token.expires_at <= now, Token.revoked_at.is_not(None))))
    return create_token(uow, now, user.name, SESSION_TOKEN, min(now + lifetime, ends or now + lifetime))


def token_session(uow, now: datetime, secret: str, lifetime: timedelta) -> str:
    """A session opened with one of the user's API tokens (Beaker's auth.login_oauth2): refused as the API
    refuses the token (unknown, revoked, expired, a disabled user); it ends no later than the token."""
    authenticate(uow, "Bearer " + secret, now)
    token = uow.session.execute(select(Token).where(Token.token_hash == hash_token(secret.strip()))).scalar_one()
    return open_session(uow, now, uow.session.get(User, token.user_id), lifetime, token.expires_at)


def session_actor(uow, secret: str | None, now: datetime) -> Actor | None:
    """The signed-in user of a session cookie, or None (unknown, expired, revoked, disabled)."""
    if not secret:
        return None
    try:
        return authenticate(uow, "Bearer " + secret, now)
    except Unauthenticated:
        return None


def sign_out(uow, now: datetime, secret: str | None) -> None:
    if not secret:
        return
    token = uow.session.execute(select(Token).where(Token.token_hash == hash_token(secret))).scalar_one_or_none()
    if token is not None and token.name == SESSION_TOKEN and token.revoked_at is None:
        token.revoked_at = now


def remote_actor(uow, name: str) -> Actor | None:
    """The user a trusted front proxy names (REMOTE_USER); None when lablease does not know them."""
    user = uow.session.execute(select(User).where(User.name == name)).scalar_one_or_none()
    if user is None or user.disabled:
        return None
    return actor_for(uow, user)


def calendar_token(uow, actor: Actor, rotate: bool = False) -> str:
    """The secret in the actor's calendar feed URL: made on first use, replaced (old URL dead) on rotation."""
    login = _login(uow, actor.id)
    if rotate or not login.calendar_token:
        login.calendar_token = "cal_" + secrets.token_urlsafe(24)
    return login.calendar_token


def calendar_owner(uow, user_name: str, token: str) -> Actor:
    """Whose feed a calendar URL opens (its user name and secret must both match); NotFound-like otherwise."""
    session = uow.session
    user = session.execute(select(User).where(User.name == user_name)).scalar_one_or_none()
    login = session.get(WebLogin, user.id) if user is not None else None
    if user is None or user.disabled or login is None or not login.calendar_token or not secrets.compare_digest(
            login.calendar_token.encode(), token.encode()):
        raise Unauthenticated("this calendar address is not (or no longer) valid")
    return actor_for(uow, user)


def calendar_token_of(uow, actor: Actor) -> str | None:
    """The actor's calendar secret if they made one (reading never makes one: that is a POST)."""
    login = uow.session.get(WebLogin, actor.id)
    return login.calendar_token if login is not None else None
