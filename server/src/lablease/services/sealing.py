"""Sealing the secrets stored before they were encrypted (run by `lablease-server init`)."""
from __future__ import annotations

from sqlalchemy import JSON, String, select, type_coerce
from sqlalchemy.orm.attributes import flag_modified

from ..store.secrets import SEALED, is_secret_key
from ..store.tables import Group, System, User


def _plain(value) -> bool:
    return isinstance(value, str) and bool(value) and not value.startswith(SEALED)


def seal_all(uow) -> int:
    """Write again every row holding a secret in plain text, which seals it; returns how many rows."""
    session = uow.session
    stale = []
    for model in (User, Group):  # read as stored (type_coerce skips the sealing column type)
        rows = session.execute(select(model.id, type_coerce(model.webhook_secret, String)))
        stale += [(model, ident, "webhook_secret") for ident, value in rows if _plain(value)]
    for column in ("power", "netboot"):
        rows = session.execute(select(System.id, type_coerce(getattr(System, column), JSON)))
        stale += [(System, ident, column) for ident, values in rows
                  if any(is_secret_key(k) and _plain(v) for k, v in (values or {}).items())]
    for model, ident, column in stale:
        flag_modified(session.get(model, ident), column)
    session.flush()
    return len(stale)
