"""Telling an advance reservation's people what happened to it: webhooks, and mail per its -m flags."""
from __future__ import annotations

from datetime import datetime

from ...domain import advance as rules
from ...store.advance_tables import AdvanceReservation
from ..messages import notices


def publish(uow, ar: AdvanceReservation, now: datetime, event: str, text: str,
             mail_kind: str | None = None, extra: dict | None = None) -> None:
    """Webhooks of the owner (and their groups) for every event; mail only for the AR's -m flags."""
    mail = bool(mail_kind) and rules.wants_mail(ar.mail_events, mail_kind)
    data = {"advance_reservation": ar.id, "name": ar.name, "state": ar.state, **(extra or {})}
    key = f"{ar.id}:{event}:{ar.state}:{now.isoformat()}"
    notices.queue(uow, notices.Notice(
        ar.owner, f"ar.{event}", key, f"[lablease] advance reservation {ar.id}: {event.replace('_', ' ')}", text, data,
        channels=None if mail else ("webhook",), extra_mail=tuple(ar.mail_to or ()) if mail else ()), now)
