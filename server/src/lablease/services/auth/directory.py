"""The site's LDAP directory: signing in with its passwords, and its groups as lablease's (ldap3, pure Python).

Reading the directory is I/O with bounded timeouts (`ldap_timeout`); a directory that does not answer is
DirectoryUnavailable (503 naming it), never a hang. What is decided from what was read is in domain/directory.py;
the writes (the user made on first sign-in, their directory groups) are `admit` and `apply_groups` here.
A person's directory groups are replaced by the directory's answer at each sign-in and each worker sync
(`sync_all`); lablease's own groups are never touched. docs/access.md, "Directory and Kerberos sign-in".
"""
from __future__ import annotations

import logging
import math
import warnings
import ssl
from datetime import datetime
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from sqlalchemy import delete, select

from ...domain.directory import Person, fill_filter, group_changes
from ...domain.errors import DirectoryUnavailable, Unauthenticated
from ...store.tables import Group, GroupMember, Token, User

if TYPE_CHECKING:
    import ldap3
from ..handlers import unit_of_work
from ..people.users import NAME_PATTERN, is_name
from ..records import activity

log = logging.getLogger("lablease.directory")

REFUSED = "unknown user name or wrong password"  # the one message of every failed sign-in (services/auth/signin.py)
_PERSON_ATTRIBUTES = ["mail", "displayName", "cn"]


def load_ldap3():
    """ldap3, imported when a directory is first asked (a site without one never loads it). Its 2.9.1
    imports pyasn1's old names, which pyasn1 0.6 warns about: harmless, and not lablease's to fix."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".* is deprecated. Please use .* instead", category=DeprecationWarning)
        import ldap3
        import ldap3.core.exceptions
    return ldap3


def _checked_tls(ldap3):
    """ldap3's Tls with the standard library's checks: ldap3 2.9.1 turns the SSLContext's host name check off
    and calls ssl.match_hostname instead (deprecated, gone in Python 3.12). Here the context checks the
    certificate chain (ldap_ca_file) and the directory's host name (or IP address) during the handshake."""
    class CheckedTls(ldap3.Tls):
        def wrap_socket(self, connection, do_handshake=False):
            context = ssl.create_default_context(cafile=self.ca_certs_file)
            connection.socket = context.wrap_socket(connection.socket, server_hostname=connection.server.host,
                                                    do_handshake_on_connect=True)
    return CheckedTls


def configured(settings) -> bool:
    return settings is not None and bool(settings.ldap_url)


class Directory:
    """One conversation with the directory of `settings`: connections are opened per call and closed after."""

    def __init__(self, settings):
        self.ldap3 = ldap3 = load_ldap3()
        self.failure = ldap3.core.exceptions.LDAPException  # every error of the library's
        self.settings = settings
        self.url = settings.ldap_url
        timeout = settings.ldap_timeout.total_seconds()
        self.timeout = max(1, math.ceil(timeout))  # whole seconds: ldap3 packs it into SO_RCVTIMEO
        secure = urlsplit(self.url).scheme == "ldaps"
        tls = _checked_tls(ldap3)(ca_certs_file=settings.ldap_ca_file or None, validate=ssl.CERT_REQUIRED)
        self.server = ldap3.Server(self.url, use_ssl=secure, tls=tls, connect_timeout=timeout, get_info=ldap3.NONE)
        self.starttls = not secure  # a password never crosses the network in clear

    def _open(self, dn: str | None = None, password: str | None = None):
        """A connection bound as `dn` (anonymous without one) over TLS; None when the directory refuses the
        bind (wrong password). Any other failure is DirectoryUnavailable. A failed connection is closed."""
        connection = self.ldap3.Connection(self.server, user=dn, password=password, read_only=True,
                                           receive_timeout=self.timeout, auto_bind=self.ldap3.AUTO_BIND_NONE,
                                           raise_exceptions=False)
        try:
            try:
                connection.open()
            except self.failure as error:
                raise DirectoryUnavailable(f"the directory {self.url} does not answer: {_reason(error)}") from None
            try:
                started = not self.starttls or connection.start_tls()
            except self.failure as error:  # e.g. a certificate that ldap_ca_file does not vouch for
                started, connection.result = False, {"description": _reason(error)}
            if not started:
                raise DirectoryUnavailable(f"StartTLS with the directory {self.url} failed: "
                                           f"{connection.result.get('description')}")
            try:
                bound = connection.bind()
            except self.failure as error:
                raise DirectoryUnavailable(f"the directory {self.url} does not answer: {_reason(error)}") from None
            if bound:
                return connection
            if connection.result.get("result") != 49:  # invalidCredentials is an answer, anything else is not
                raise DirectoryUnavailable(f"the directory {self.url} refused the bind: "
                                           f"{connection.result.get('description')}")
        except BaseException:
            _close(connection)
            raise
        _close(connection)
        return None

    def _search(self, connection: ldap3.Connection, base: str, query: str, attributes: list[str]) -> list[dict]:
        try:
            connection.search(base, query, self.ldap3.SUBTREE, attributes=attributes, time_limit=self.timeout)
        except self.failure as error:
            raise DirectoryUnavailable(f"the directory {self.url} does not answer: {_reason(error)}") from None
        # Anything but success is the directory's trouble, never "nobody found": a base that does not exist
        # (noSuchObject) must not read as everyone having left the directory, whose tokens the sync would end.
        if connection.result.get("result") != 0:
            raise DirectoryUnavailable(f"the directory {self.url} refused a search of {base}: "
                                       f"{connection.result.get('description')}")
        return [entry for entry in connection.response or () if entry.get("type") == "searchResEntry"]

    def _service(self) -> ldap3.Connection:
        settings = self.settings
        connection = self._open(settings.ldap_bind_dn or None, settings.ldap_bind_password or None)
        if connection is None:
            raise DirectoryUnavailable(f"the directory {self.url} refused ldap_bind_dn's password")
        return connection

    def _entry(self, connection: ldap3.Connection, username: str) -> dict | None:
        query = fill_filter(self.settings.ldap_user_filter, username=username)
        found = self._search(connection, self.settings.ldap_user_base, query, _PERSON_ATTRIBUTES)
        if len(found) > 1:  # the filter is too wide: nobody signs in as one of several people
            log.warning("the directory has %d entries for user %s (ldap_user_filter %s): refused",
                        len(found), username, self.settings.ldap_user_filter)
            return None
        return found[0] if found else None

    def _person(self, connection: ldap3.Connection, username: str, entry: dict) -> Person:
        attributes = entry.get("attributes", {})
        groups = {}
        if self.settings.ldap_group_base:
            query = fill_filter(self.settings.ldap_group_filter, username=username, dn=entry["dn"])
            for group in self._search(connection, self.settings.ldap_group_base, query, ["cn"]):
                name = _first(group.get("attributes", {}).get("cn"))
                if name and is_name(name):
                    groups[name] = group["dn"]
                else:
                    log.warning("directory group %s has no cn lablease can use as a name (%s): skipped",
                                group["dn"], NAME_PATTERN)
        return Person(entry["dn"], username, _first(attributes.get("mail")),
                      _first(attributes.get("displayName")) or _first(attributes.get("cn")), groups)

    def sign_in(self, username: str, password: str) -> Person:
        """The person whose password this is (bound as them), with their groups; Unauthenticated otherwise."""
        if not password or not is_name(username):  # an empty password is an anonymous bind (RFC 4513 5.1.2)
            raise Unauthenticated(REFUSED)
        service = self._service()
        try:
            entry = self._entry(service, username)
            if entry is None:
                raise Unauthenticated(REFUSED)
            own = self._open(entry["dn"], password)
            if own is None:
                raise Unauthenticated(REFUSED)
            _close(own)
            return self._person(service, username, entry)
        finally:
            _close(service)

    def people(self, usernames: list[str]) -> dict[str, Person | None]:
        """Each name's person as the directory has them now, None for those it no longer has."""
        service = self._service()
        try:
            found = {}
            for username in usernames:
                entry = self._entry(service, username) if is_name(username) else None
                found[username] = self._person(service, username, entry) if entry is not None else None
            return found
        finally:
            _close(service)


def _first(value):
    if isinstance(value, (list, tuple)):
        return str(value[0]) if value else None
    return str(value) if value else None


def _close(connection) -> None:
    """Close a connection whatever state it is in (ldap3 leaves the socket of a failed open or StartTLS)."""
    try:
        connection.unbind()
    except Exception:  # noqa: BLE001 - closing what already failed
        pass
    if getattr(connection, "socket", None) is not None:
        connection.socket.close()


def _reason(error: Exception) -> str:
    return str(error).splitlines()[0] if str(error) else type(error).__name__


def admit(uow, now: datetime, person: Person) -> User:
    """The lablease user of a person the directory vouched for: made on first sign-in, their mail, name and
    directory groups brought up to date otherwise. A disabled user stays refused."""
    session = uow.session
    user = session.execute(select(User).where(User.name == person.name)).scalar_one_or_none()
    if user is None:
        user = User(name=person.name, email=person.email, display_name=person.display_name,
                    directory_dn=person.dn, is_admin=False, disabled=False, created_at=now)
        session.add(user)
        session.flush()
        activity.record(uow, None, now, "user", person.name, "created", "directory_dn", None, person.dn)
    elif user.disabled:
        raise Unauthenticated(REFUSED)
    else:
        user.directory_dn, user.display_name = person.dn, person.display_name
        user.email = person.email or user.email
    apply_groups(uow, now, user, person.groups)
    return user


def apply_groups(uow, now: datetime, user: User, wanted: dict[str, str]) -> None:
    """Make the user's directory groups exactly `wanted` ({name: DN}); their lablease groups stay."""
    session = uow.session
    held = dict(session.execute(select(Group.name, Group.id).join(GroupMember, GroupMember.group_id == Group.id)
                                .where(GroupMember.user_id == user.id, Group.directory_dn.is_not(None))).all())
    join, leave = group_changes(set(held), set(wanted))
    for name in sorted(join):
        group = session.execute(select(Group).where(Group.name == name)).scalar_one_or_none()
        if group is None:
            group = Group(name=name, directory_dn=wanted[name], description="from the directory", created_at=now)
            session.add(group)
            session.flush()
            activity.record(uow, None, now, "group", name, "created", "directory_dn", None, wanted[name])
        elif group.directory_dn is None:  # a group made in lablease keeps its own members
            log.warning("directory group %s has the name of lablease's own group %s: its members are not "
                        "synced into it", wanted[name], name)
            continue
        session.add(GroupMember(group_id=group.id, user_id=user.id))
        activity.record(uow, None, now, "group", name, "member_added", "member", None, user.name)
    for name in sorted(leave):
        session.execute(delete(GroupMember).where(GroupMember.group_id == held[name],
                                                  GroupMember.user_id == user.id))
        activity.record(uow, None, now, "group", name, "member_removed", "member", user.name, None)
    session.flush()


def remove(uow, now: datetime, user: User) -> None:
    """Someone the directory no longer has: their tokens and web sessions end, and its groups are left.
    They are not disabled: were they to come back, their next sign-in works again."""
    apply_groups(uow, now, user, {})
    ended = uow.session.execute(select(Token).where(Token.user_id == user.id, Token.revoked_at.is_(None))).scalars()
    count = 0
    for token in ended:
        token.revoked_at, count = now, count + 1
    if count:
        activity.record(uow, None, now, "user", user.name, "changed", "tokens", count, 0)


def directory_users(uow) -> list[str]:
    return list(uow.session.execute(select(User.name).where(User.directory_dn.is_not(None), User.disabled.is_(False))
                                .order_by(User.name)).scalars())


def sync_all(db, settings, now: datetime) -> int:
    """The worker's step: every directory person's groups read again, those gone from the directory removed.
    The directory is read outside any transaction (it may be slow), then written in one. Returns how many
    people were read."""
    with unit_of_work(db, settings, write=False) as uow:
        names = directory_users(uow)
    if not names:
        return 0
    people = Directory(settings).people(names)
    with unit_of_work(db, settings) as uow:
        for name, person in people.items():
            user = uow.session.execute(select(User).where(User.name == name)).scalar_one_or_none()
            if user is None or user.directory_dn is None:
                continue
            if person is None:
                log.info("user %s is no longer in the directory: their tokens and sessions end", name)
                remove(uow, now, user)
            else:
                apply_groups(uow, now, user, person.groups)
        uow.commit()
    return len(people)
