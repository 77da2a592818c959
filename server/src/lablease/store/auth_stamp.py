"""A per-database stamp that moves whenever a commit changes who a token stands for.

Processes that cache verified tokens (api/app.py, services/people/token_cache.py)
compare the stamp's modification time before trusting a cached entry, so a
token revoked, a user disabled or a group membership changed by any process
on this host (the API's other gunicorn workers, `lablease-server`) is seen by
the next request. The stamp is a file beside a SQLite database, or named after
the database in the temporary directory; a process on another host never sees
it move and relies on the cache's time bound instead (docs/access.md, "Tokens").
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path

from sqlalchemy import event
from sqlalchemy.orm import Session

from .tables import Group, GroupMember, Token, User

_TABLES = {"tokens", "users", "group_members", "groups"}
_MODELS = (Token, User, GroupMember, Group)
_CHANGED = "auth_changed"  # session.info key: this transaction changed a token, user or membership


def stamp_path(engine) -> Path:
    """The stamp of the database `engine` opens: the same path in every process of this host."""
    url = engine.url
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        return Path(url.database + "-auth-stamp")  # beside the database file, and gone with it
    digest = hashlib.sha256(url.render_as_string(hide_password=True).encode()).hexdigest()[:32]
    return Path(tempfile.gettempdir()) / "lablease-auth" / digest


def stamp_of(path: Path) -> int:
    """The stamp's current value (0 while no change was ever committed on this host)."""
    try:
        return os.stat(path).st_mtime_ns
    except FileNotFoundError:
        return 0


def _move(path: Path) -> None:
    """Touch the stamp; nanosecond times differ between two commits on Linux file systems."""
    path.parent.mkdir(exist_ok=True)
    with open(path, "a"):
        pass
    os.utime(path)


@event.listens_for(Session, "before_flush")
def _note_orm_changes(session, flush_context, instances) -> None:
    if any(isinstance(o, _MODELS) for o in (*session.new, *session.dirty, *session.deleted)):
        session.info[_CHANGED] = True


@event.listens_for(Session, "do_orm_execute")
def _note_statements(state) -> None:
    """Core statements too (e.g. signing in deletes a user's ended sessions' tokens)."""
    table = getattr(state.statement, "table", None)
    if (state.is_update or state.is_delete or state.is_insert) and getattr(table, "name", None) in _TABLES:
        state.session.info[_CHANGED] = True


@event.listens_for(Session, "after_commit")
def _move_stamp(session) -> None:
    if session.info.pop(_CHANGED, False):
        _move(stamp_path(session.get_bind()))


@event.listens_for(Session, "after_rollback")
def _forget(session) -> None:
    session.info.pop(_CHANGED, None)
