"""Kerberos sign-in: `Authorization: Negotiate <SPNEGO token>` accepted with the server's keytab (gssapi).

The token is checked by MIT Kerberos' GSS-API with the keys of `kerberos_keytab` (the server's
`HTTP/<host>@REALM`): a ticket for another service, an expired one, a replayed or forged token all fail
there and are refused (401) with one line saying why. The client's principal becomes a lablease user name
by domain/directory.principal_user (the `kerberos_principals` map, then the realm rule); a name lablease does
not know yet is made from the site's directory when there is one (services/auth/directory.py), as at a password
sign-in. Beaker's auth.login_krbv sends a bare AP-REQ instead (accept_request, services/auth/krb5_request.py),
mapped the same way. docs/access.md, "Directory and Kerberos sign-in".
"""
from __future__ import annotations

import base64
import binascii
import logging
from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from ...domain.directory import principal_user
from ...domain.errors import Unauthenticated
from ...domain.permissions import Actor
from ...store.tables import User
from ..handlers import unit_of_work
from ..people.users import actor_for
from . import directory, signin
from .krb5_request import read_request

log = logging.getLogger("lablease.kerberos")
SCHEME = "Negotiate"


@dataclass(frozen=True)
class Accepted:
    principal: str  # the client's, e.g. alice@EXAMPLE.COM
    service: str  # ours, e.g. HTTP/lab.example.com@EXAMPLE.COM
    reply: str | None  # the token to send back in WWW-Authenticate (mutual authentication), base64


def configured(settings) -> bool:
    return settings is not None and bool(settings.kerberos_keytab)


def offered(settings, header: str | None) -> str | None:
    """The base64 token of an `Authorization: Negotiate ...` header when the site takes Kerberos, else None."""
    if not configured(settings) or not header:
        return None
    scheme, _, token = header.partition(" ")
    return token.strip() if scheme.lower() == SCHEME.lower() else None


def accept(settings, token: str) -> Accepted:
    """Check one SPNEGO token with the server's keytab; Unauthenticated with GSS-API's reason otherwise."""
    import gssapi  # here: a site without Kerberos never loads libgssapi

    try:
        data = base64.b64decode(token, validate=True)
    except (binascii.Error, ValueError):
        raise Unauthenticated("the Negotiate token is not base64") from None
    try:
        credentials = gssapi.Credentials(usage="accept", store={"keytab": settings.kerberos_keytab})
        context = gssapi.SecurityContext(creds=credentials, usage="accept")
        reply = context.step(data)
        # An acceptor's step keeps its failure (to send the reject token) and raises it at the next use
        complete, principal, service = context.complete, str(context.initiator_name), str(context.target_name)
    except gssapi.exceptions.GSSError as error:
        raise Unauthenticated(f"the Kerberos ticket was refused: {_reason(error)}") from None
    if not complete:  # SPNEGO with Kerberos takes one step; more would mean another mechanism
        raise Unauthenticated("the Negotiate exchange needs more than one step: only Kerberos is taken")
    return Accepted(principal, service, base64.b64encode(reply).decode() if reply else None)


def accept_request(settings, request: str) -> Accepted:
    """Check Beaker's auth.login_krbv request: a bare KRB_AP_REQ (bkr's DCE-style first token), base64 with
    the line breaks of Python's encodebytes, for a principal of the server's keytab (services/auth/krb5_request.py)."""
    if not configured(settings):
        raise Unauthenticated("this server takes no Kerberos login (kerberos_keytab is not set): log in with "
                              "a password or an API token")
    try:
        data = base64.b64decode("".join(str(request or "").split()), validate=True)
    except (binascii.Error, ValueError):
        raise Unauthenticated("the Kerberos request is not base64") from None
    principal, service = read_request(settings.kerberos_keytab, data)
    return Accepted(principal, service, None)


def _reason(error) -> str:
    """GSS-API's words for a failure, on one line: its minor (mechanism's) message when it has one, e.g.
    "Request is a replay", "Ticket expired", "... not found in keytab"."""
    text = " ".join(str(error).split())
    major, _, minor = text.partition(", Minor (")
    minor = minor.partition("): ")[2]
    return minor if minor and minor != "Unknown error" else major.partition("): ")[2] or text


def realms(settings, service: str) -> tuple[str, ...]:
    """The realms whose principals are users of the same name: kerberos_realms, else the service's own."""
    return settings.kerberos_realms or (service.rpartition("@")[2],)


def user_name(settings, accepted: Accepted) -> str:
    """The lablease user name of an accepted principal, or Unauthenticated naming the settings that map them."""
    name = principal_user(accepted.principal, realms(settings, accepted.service), settings.kerberos_principals)
    if name is None:
        raise Unauthenticated(f"Kerberos principal {accepted.principal} is no lablease user (see "
                              "kerberos_realms and kerberos_principals)")
    return name


def admit_from_directory(db, settings, name: str, now: datetime) -> None:
    """A principal's user made from the site's directory when lablease does not know them yet (as at their
    first password sign-in): the directory is read outside any transaction, the user written in one."""
    if not directory.configured(settings):
        return
    with unit_of_work(db, settings, write=False) as uow:
        if uow.session.execute(select(User.id).where(User.name == name)).first() is not None:
            return
    person = directory.Directory(settings).people([name]).get(name)
    if person is None:
        return
    with unit_of_work(db, settings) as uow:
        directory.admit(uow, now, person)
        uow.commit()


def admit_here(uow, name: str, now: datetime) -> None:
    """admit_from_directory inside a unit of work already open (Beaker's hub): its transaction, having only
    read so far, is ended first, so that no database lock is held while the directory answers."""
    session, settings = uow.session, uow.settings
    if not directory.configured(settings) or session.execute(select(User.id).where(User.name == name)).first():
        return
    if not (session.new or session.dirty or session.deleted):
        session.rollback()
    person = directory.Directory(settings).people([name]).get(name)
    if person is not None:
        directory.admit(uow, now, person)


def actor_of(uow, accepted: Accepted, name: str) -> Actor:
    """The Actor of an accepted principal's user; Unauthenticated when lablease has no such (enabled) user."""
    user = uow.session.execute(select(User).where(User.name == name)).scalar_one_or_none()
    if user is None:
        raise Unauthenticated(f"Kerberos principal {accepted.principal} is user {name}, whom lablease does not know")
    if user.disabled:
        raise Unauthenticated(f"user {name} is disabled")
    return actor_for(uow, user)


def sign_in(db, settings, token: str, now: datetime) -> tuple[Accepted, str]:
    """Check a Negotiate token and make sure its user exists (from the directory): (accepted, user name).
    Called before the request's own transaction: a slow directory holds no lock of it."""
    accepted = accept(settings, token)
    name = user_name(settings, accepted)
    admit_from_directory(db, settings, name, now)
    log.info("Kerberos principal %s signed in as %s", accepted.principal, name)
    return accepted, name


def beaker_session(uow, now: datetime, request: str, lifetime) -> tuple[str, str]:
    """Beaker's auth.login_krbv: the request checked, its principal mapped and made a user as for Negotiate,
    and a session opened as by auth.login_password: (session secret, user name)."""
    accepted = accept_request(uow.settings, request)
    name = user_name(uow.settings, accepted)
    admit_here(uow, name, now)
    log.info("Kerberos principal %s logged in to the Beaker hub as %s", accepted.principal, name)
    return web_session(uow, now, accepted, name, lifetime), name


def web_session(uow, now: datetime, accepted: Accepted, name: str, lifetime) -> str:
    """A web session for an accepted principal's user (the pages: a browser answered the challenge)."""
    user = uow.session.get(User, actor_of(uow, accepted, name).id)
    return signin.open_session(uow, now, user, lifetime)
