"""Users, groups and API tokens; turning a bearer token into an Actor."""
from __future__ import annotations

import hashlib
import re
import secrets
from datetime import datetime

from sqlalchemy import bindparam, select

from ...domain.errors import Conflict, Invalid, NotFound, Unauthenticated
from ...domain.permissions import Actor
from ...domain.times import format_time
from ...store.tables import Group, GroupMember, Token, User
from ..records import activity
from .token_cache import TokenCache

TOKEN_PREFIX = "llt_"
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$"  # users, groups, pools, schedule subjects (also in the API description)
_NAME = re.compile(NAME_PATTERN)


def hash_token(secret: str) -> str:
    """Tokens are long random secrets: a fast hash is enough, and keeps auth cheap."""
    return hashlib.sha256(secret.encode()).hexdigest()


def check_name(name: str, field: str = "name") -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):  # fullmatch: "$" alone lets a final newline in
        raise Invalid(field, f"{name!r} is not a valid name (letters, digits, _ . @ -; up to 64)")
    return name


def is_name(name) -> bool:
    """Whether `name` could be a user's or a group's (sign-in checks it before any lookup)."""
    return isinstance(name, str) and _NAME.fullmatch(name) is not None


def _group(uow, name: str, now: datetime) -> Group:
    session = uow.session
    group = session.execute(select(Group).where(Group.name == name)).scalar_one_or_none()
    if group is None:
        group = Group(name=check_name(name, "group"), created_at=now)
        session.add(group)
        session.flush()
    return check_hand_edited(group)


def check_hand_edited(group: Group) -> Group:
    """The group, when its members may be changed in lablease: a directory group's follow the directory."""
    if group.directory_dn is not None:
        raise Conflict(f"group {group.name} comes from the directory ({group.directory_dn}): its members are "
                       "changed there, and lablease follows at the next sign-in or sync")
    return group


def add_user(uow, now: datetime, name: str, is_admin: bool = False, groups=(), email: str | None = None) -> tuple[User, str]:
    """Create a user and a first token; returns the user and the token's secret."""
    session = uow.session
    check_name(name)
    if session.execute(select(User).where(User.name == name)).scalar_one_or_none():
        raise Conflict(f"user {name} already exists")
    user = User(name=name, is_admin=is_admin, email=email, created_at=now)
    session.add(user)
    session.flush()
    for group_name in groups:
        session.add(GroupMember(group_id=_group(uow, group_name, now).id, user_id=user.id))
    if is_admin and ARUSERS not in groups:
        _first_admin_in_arusers(uow, user)
    secret = _new_token(uow, user, "default", now)
    activity.record(uow, None, now, "user", name, "created", "is_admin", None, is_admin)
    return user, secret


ARUSERS = "arusers"  # who may create advance reservations besides admins (Grid Engine's arusers)


def ensure_arusers(uow, now: datetime) -> None:
    """The arusers group exists (made by `lablease-server init`)."""
    session = uow.session
    if session.execute(select(Group).where(Group.name == ARUSERS)).scalar_one_or_none() is None:
        session.add(Group(name=ARUSERS, description="may create advance reservations", created_at=now))
        session.flush()


def _first_admin_in_arusers(uow, user: User) -> None:
    """The first administrator also becomes the first member of arusers, who can then add others."""
    session = uow.session
    group = session.execute(select(Group).where(Group.name == ARUSERS)).scalar_one_or_none()
    if group is None:
        return
    if session.execute(select(GroupMember).where(GroupMember.group_id == group.id)).first() is None:
        session.add(GroupMember(group_id=group.id, user_id=user.id, is_owner=True))


def _new_token(uow, user: User, name: str, now: datetime, expires_at: datetime | None = None) -> str:
    session = uow.session
    secret = TOKEN_PREFIX + secrets.token_urlsafe(32)
    session.add(Token(user_id=user.id, name=name, token_hash=hash_token(secret), created_at=now, expires_at=expires_at))
    session.flush()
    return secret


def find_user(uow, name: str) -> User:
    user = uow.session.execute(select(User).where(User.name == name)).scalar_one_or_none()
    if user is None:
        raise NotFound(f"no user named {name}")
    return user


def create_token(uow, now: datetime, user_name: str, name: str = "token", expires_at: datetime | None = None) -> str:
    return _new_token(uow, find_user(uow, user_name), name, now, expires_at)


def revoke_tokens(uow, now: datetime, user_name: str, name: str | None = None) -> int:
    """Revoke a user's tokens (all, or those with the given name); returns how many. A name that labels none
    of the user's usable tokens is NotFound naming those there are: a typo must not look like a revocation."""
    user = find_user(uow, user_name)
    query = select(Token).where(Token.user_id == user.id, Token.revoked_at.is_(None))
    tokens = list(uow.session.execute(query).scalars())
    if name:
        named = [token for token in tokens if token.name == name]
        if not named:
            labels = sorted({token.name for token in tokens})
            raise NotFound(f"{user_name} has no token named {name!r} that is not revoked "
                           f"({'theirs: ' + ', '.join(labels) if labels else 'they have none'}); nothing revoked")
        tokens = named
    for token in tokens:
        token.revoked_at = now
    return len(tokens)


def token_list(uow, now: datetime, user_name: str) -> list[dict]:
    """A user's tokens, oldest first: label and dates, never the secret (only its hash is kept anyway)."""
    user = find_user(uow, user_name)
    tokens = uow.session.execute(select(Token).where(Token.user_id == user.id).order_by(Token.id)).scalars()
    return [{"name": token.name, "created": format_time(token.created_at), "expires": format_time(token.expires_at),
             "revoked": format_time(token.revoked_at),
             "state": "revoked" if token.revoked_at else "expired" if token.expires_at and token.expires_at <= now
             else "active"} for token in tokens]


def user_list(uow) -> list[dict]:
    """Every user with their groups and how many usable tokens they hold (administrators: `user list`)."""
    session = uow.session
    groups: dict[int, list[str]] = {}
    for user_id, group in session.execute(select(GroupMember.user_id, Group.name)
                                          .join(Group, Group.id == GroupMember.group_id).order_by(Group.name)):
        groups.setdefault(user_id, []).append(group)
    tokens: dict[int, int] = {}
    for user_id in session.execute(select(Token.user_id).where(Token.revoked_at.is_(None))).scalars():
        tokens[user_id] = tokens.get(user_id, 0) + 1
    return [{"name": user.name, "admin": user.is_admin, "disabled": user.disabled, "email": user.email,
             "groups": groups.get(user.id, []), "tokens": tokens.get(user.id, 0),
             "created": format_time(user.created_at)}
            for user in session.execute(select(User).order_by(User.name)).scalars()]


def set_disabled(uow, now: datetime, name: str, disabled: bool) -> bool:
    """Disable a user (their tokens, web sessions and calendar feed are refused until enabled again) or enable
    them; returns whether anything changed. What they hold stays theirs: an administrator returns it."""
    user = find_user(uow, name)
    if user.disabled == disabled:
        return False
    activity.record(uow, None, now, "user", name, "changed", "disabled", user.disabled, disabled)
    user.disabled = disabled
    return True


def actor_for(uow, user: User) -> Actor:
    group_ids = uow.session.execute(select(GroupMember.group_id).where(GroupMember.user_id == user.id)).scalars()
    return Actor(user.id, user.name, user.is_admin, frozenset(group_ids))


_tokens, _users, _members = Token.__table__, User.__table__, GroupMember.__table__
# One indexed statement: the token (unique hash), its user, and one row per group the user is in.
_WHO = (select(_users.c.id, _users.c.name, _users.c.is_admin, _users.c.disabled, _tokens.c.revoked_at,
               _tokens.c.expires_at, _members.c.group_id)
        .select_from(_tokens.join(_users, _users.c.id == _tokens.c.user_id)
                     .outerjoin(_members, _members.c.user_id == _users.c.id))
        .where(_tokens.c.token_hash == bindparam("token_hash")))


def authenticate(uow, header: str | None, now: datetime, cache: TokenCache | None = None) -> Actor:
    """The Actor behind an `Authorization: Bearer <token>` header, or Unauthenticated.

    With a cache (the API's), a token verified in the last few seconds is not read again
    (services/people/token_cache.py says what bounds a stale entry).
    """
    if not header:
        raise Unauthenticated("this request needs an API token: send Authorization: Bearer <token>")
    scheme, _, secret = header.partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        raise Unauthenticated("the Authorization header must be: Bearer <token>")
    token_hash = hash_token(secret.strip())
    if cache is not None and (actor := cache.get(token_hash, now)) is not None:
        return actor
    rows = uow.session.execute(_WHO, {"token_hash": token_hash}).all()
    if not rows:
        raise Unauthenticated("the API token is not known")
    user_id, name, is_admin, disabled, revoked_at, expires_at, _ = rows[0]
    if revoked_at is not None:
        raise Unauthenticated("the API token was revoked")
    if expires_at is not None and expires_at <= now:
        raise Unauthenticated("the API token has expired")
    if disabled:
        raise Unauthenticated(f"user {name} is disabled")
    actor = Actor(user_id, name, bool(is_admin), frozenset(row[-1] for row in rows if row[-1] is not None))
    if cache is not None:
        cache.put(token_hash, actor, expires_at, now)
    return actor


def whoami(uow, actor: Actor) -> dict:
    groups = uow.session.execute(
        select(Group.name).join(GroupMember, GroupMember.group_id == Group.id).where(GroupMember.user_id == actor.id)
    ).scalars()
    return {"name": actor.name, "admin": actor.is_admin, "groups": sorted(groups)}
