"""The outbox: claiming messages to deliver, recording the outcome, recovering after a crash.

Delivery is at least once: a message is claimed (status `sending`) in one
transaction, delivered outside any transaction, and marked `sent` in
another. A crash between delivery and marking leaves it `sending`; on start
the worker puts such messages back to `pending`, and receivers tell a repeat
by its stable id (mail Message-ID, webhook X-Lablease-Delivery).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select, update

from ...domain.notices import retry_at
from ...store.tables import Group, Outbox, User


@dataclass(frozen=True)
class Delivery:
    id: int
    channel: str
    address: str  # a mail address or a URL
    secret: str | None
    subject: str
    payload: dict
    attempts: int


def _resolve(uow, row: Outbox) -> tuple[str | None, str | None]:
    """Webhook destinations name a user or group: their current URL and secret are used."""
    if row.channel == "mail":
        return row.destination, None
    kind, _, ident = row.destination.partition(":")
    owner = uow.session.get(User if kind == "user" else Group, int(ident))
    return (owner.webhook_url, owner.webhook_secret) if owner is not None else (None, None)


def _due(now: datetime):
    return Outbox.status == "pending", Outbox.next_attempt_at <= now


def due_ids(uow, now: datetime, batch: int = 20) -> list[int]:
    query = select(Outbox.id).where(*_due(now)).order_by(Outbox.next_attempt_at, Outbox.id).limit(batch)
    return list(uow.session.execute(query).scalars())


def claim(uow, message_id: int, now: datetime) -> Delivery | None:
    """Take one due message for sending (None: sent or taken by another worker meanwhile)."""
    row = uow.session.execute(select(Outbox).where(Outbox.id == message_id, *_due(now))
                          .with_for_update(skip_locked=True)).scalar_one_or_none()
    if row is None:
        return None
    address, secret = _resolve(uow, row)
    row.attempts += 1
    if not address:
        row.status, row.last_error, row.next_attempt_at = "failed", "the destination no longer exists", None
        return None
    row.status = "sending"
    return Delivery(row.id, row.channel, address, secret, row.subject, row.payload, row.attempts)


def mark_sent(uow, message_id: int, now: datetime) -> None:
    row = uow.session.get(Outbox, message_id)
    row.status, row.sent_at, row.next_attempt_at, row.last_error = "sent", now, None, None


def mark_failed(uow, message_id: int, now: datetime, error: str) -> None:
    settings = uow.settings
    row = uow.session.get(Outbox, message_id)
    row.last_error = error[:2000]
    if row.attempts >= settings.outbox_max_attempts:
        row.status, row.next_attempt_at = "failed", None
    else:
        row.status = "pending"
        row.next_attempt_at = retry_at(now, row.attempts, settings.outbox_retry_delay)


def attempt_failed(uow, message_id: int, now: datetime, error: str) -> None:
    """Claiming the message raised (its transaction rolled back): that counts as an attempt too."""
    row = uow.session.get(Outbox, message_id)
    if row is not None and row.status == "pending":
        row.attempts += 1
        mark_failed(uow, message_id, now, error)


def fail_bare(uow, message_id: int, now: datetime, error: str) -> None:
    """The last resort when even recording a failed attempt raised: the message is failed for good."""
    uow.session.execute(update(Outbox).where(Outbox.id == message_id, Outbox.status != "sent")
                        .values(status="failed", next_attempt_at=None, last_error=error[:2000]))


def recover_interrupted(uow) -> int:
    """Messages a crashed worker was sending go back to the queue."""
    result = uow.session.execute(update(Outbox).where(Outbox.status == "sending").values(status="pending"))
    return result.rowcount or 0


def next_due(uow) -> datetime | None:
    query = (select(Outbox.next_attempt_at).where(Outbox.status == "pending")
             .order_by(Outbox.next_attempt_at).limit(1))
    return uow.session.execute(query).scalar_one_or_none()


def listing(uow, status: str | None = None, limit: int = 200) -> list[dict]:
    query = select(Outbox).order_by(Outbox.id.desc()).limit(limit)
    if status:
        query = query.where(Outbox.status == status)
    return [{"id": r.id, "channel": r.channel, "destination": r.destination, "subject": r.subject,
             "status": r.status, "attempts": r.attempts, "last_error": r.last_error,
             "event": (r.payload or {}).get("event")} for r in uow.session.execute(query).scalars()]
