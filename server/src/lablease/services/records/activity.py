"""The activity log: every change to a system, reservation or schedule booking."""
from __future__ import annotations

from datetime import datetime

from sqlalchemy import select

from ...domain.paging import Page, PageRequest
from ...domain.permissions import Actor
from ...domain.times import format_time
from ...store import paging
from ...store.paging import Order
from ...store.tables import Activity


def _text(value) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return format_time(value)
    return str(value)


def record(uow, actor: Actor | None, now: datetime, object_type: str, object_id, action: str,
           field: str | None = None, old=None, new=None) -> None:
    """Log one change; actor None (or id 0) means the server itself (e.g. the worker)."""
    uow.session.add(Activity(**row(actor, now, object_type, object_id, action, field, old, new)))


def row(actor: Actor | None, now: datetime, object_type: str, object_id, action: str, field: str | None = None,
        old=None, new=None) -> dict:
    """One activity row's columns, for `record` or a Core insert of several (store/lease_rows.py)."""
    return dict(at=now, user_id=actor.id if actor and actor.id else None,
                user_name=actor.name if actor else "lablease", object_type=object_type,
                object_id=str(object_id), action=action, field=field, old=_text(old), new=_text(new))


def record_changes(uow, actor, now, object_type, object_id, changes: dict[str, tuple]) -> None:
    for field, (old, new) in changes.items():
        record(uow, actor, now, object_type, object_id, "changed", field, old, new)


def entries(uow, object_type: str, object_id, page: PageRequest) -> Page:
    """An object's activity log, newest first."""
    query = select(Activity).where(Activity.object_type == object_type, Activity.object_id == str(object_id))
    found = paging.fetch(uow, f"activity/{object_type}", query, [Order(Activity.id, descending=True)], page)
    return Page([as_dict(row) for row in found.items], found.next_after)


def as_dict(row: Activity) -> dict:
    return {
        "at": format_time(row.at),
        "user": row.user_name,
        "object": row.object_type,
        "id": row.object_id,
        "action": row.action,
        "field": row.field,
        "old": row.old,
        "new": row.new,
    }
