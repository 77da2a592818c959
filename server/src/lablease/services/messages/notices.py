"""Notices to holders, queued in the outbox in the same transaction as their cause.

Each notice goes to the user's mail address (when SMTP is configured), the
user's webhook, and the webhooks of the user's groups. A dedupe key per
event and destination means a notice is queued once however often its cause
is seen; the worker delivers it (worker/delivery.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from ...config import Settings
from ...domain.times import format_time
from ...store.tables import Group, GroupMember, Outbox, User
from ..records import feed


def _destinations(user: User, settings: Settings, groups: list[int]) -> list[tuple[str, str]]:
    found = []
    if user.email and settings.smtp_host:
        found.append(("mail", user.email))
    if user.webhook_url:
        found.append(("webhook", f"user:{user.id}"))
    return found + [("webhook", f"group:{group}") for group in groups]


def _group_webhooks(uow, user_ids) -> dict[int, list[int]]:
    """User id -> the ids of the user's groups that have a webhook, in one query."""
    found: dict[int, list[int]] = {}
    for user_id, group_id in uow.session.execute(
            select(GroupMember.user_id, Group.id).join(GroupMember, GroupMember.group_id == Group.id)
            .where(GroupMember.user_id.in_(user_ids), Group.webhook_url.is_not(None)).order_by(Group.id)):
        found.setdefault(user_id, []).append(group_id)
    return found


@dataclass(frozen=True)
class Notice:
    """One notice to a user, before it is fanned out to the user's destinations."""

    user: User
    event: str
    key: str
    subject: str
    text: str
    data: dict
    channels: tuple[str, ...] | None = None
    extra_mail: tuple = ()


def queue(uow, notice: Notice, now: datetime) -> int:
    """Queue one notice to every destination of its user (only its `channels` when given, plus mail to its
    `extra_mail` addresses); returns how many were new."""
    return queue_many(uow, [notice], now)


def queue_many(uow, found: list[Notice], now: datetime) -> int:
    """Queue notices in one statement (a user's destinations are read once); returns how many were new.
    Each is also an event of the feed (services/records/feed.py), whether or not its user has a destination."""
    session, settings = uow.session, uow.settings
    if not found:
        return 0
    feed.record(uow, [{"kind": notice.event, "user_id": notice.user.id, "payload": _payload(notice, now),
                           "dedupe_key": f"{notice.event}:{notice.key}:user:{notice.user.id}", "created_at": now}
                          for notice in found])
    users = {notice.user.id: notice.user for notice in found}
    groups = _group_webhooks(uow, list(users))
    by_user = {user_id: _destinations(user, settings, groups.get(user_id, [])) for user_id, user in users.items()}
    rows = []
    for notice in found:
        targets = [d for d in by_user[notice.user.id] if notice.channels is None or d[0] in notice.channels]
        if settings.smtp_host:
            targets += [("mail", address) for address in notice.extra_mail if ("mail", address) not in targets]
        payload = _payload(notice, now)
        rows += [{"channel": channel, "destination": destination, "subject": notice.subject, "payload": payload,
                  "dedupe_key": f"{notice.event}:{notice.key}:{channel}:{destination}", "status": "pending",
                  "attempts": 0, "next_attempt_at": now, "created_at": now} for channel, destination in targets]
    if not rows:
        return 0
    insert = pg_insert if session.get_bind().dialect.name == "postgresql" else sqlite_insert
    queued = session.connection().execute(insert(Outbox).on_conflict_do_nothing(), rows).rowcount or 0
    if queued:
        uow.wake_worker()  # a new message is due now: the worker delivers it without waiting out its sleep
    return queued


def _payload(notice: Notice, now: datetime) -> dict:
    """A webhook's body, which the event feed serves too."""
    return {"event": notice.event, "at": format_time(now), "user": notice.user.name, "message": notice.text,
            **notice.data}


def reservation_ending(uow, reservation, now: datetime) -> None:
    end = format_time(reservation.end_at)
    text = (f"Your reservation {reservation.id} of {reservation.system.fqdn} ends at {end}. "
            f"Extend it with: lablease extend {reservation.id} --by 4h")
    queue(uow, Notice(
        reservation.user, "reservation.ending", f"{reservation.id}:{end}",
        f"[lablease] {reservation.system.fqdn}: your reservation ends at {end}", text,
        {"reservation": reservation.id, "system": reservation.system.fqdn, "end": end}), now)


def reservation_returned(uow, reservation, now: datetime, why: str) -> None:
    queue_many(uow, [returned_notice(reservation.id, reservation.system.fqdn, reservation.user, why)],
               now)


def returned_notice(reservation_id: int, fqdn: str, user: User, why: str) -> Notice:
    text = f"Your reservation {reservation_id} of {fqdn} was returned: {why}."
    return Notice(user, "reservation.returned", str(reservation_id),
                  f"[lablease] {fqdn}: your reservation was returned", text,
                  {"reservation": reservation_id, "system": fqdn, "reason": why})


def loan_ending(uow, loan, fqdn: str, now: datetime) -> None:
    end = format_time(loan.end_at)
    text = f"Your loan of {fqdn} ends at {end}. Ask someone with loan_any on it to extend it."
    queue(uow, Notice(
        loan.recipient, "loan.ending", f"{loan.id}:{end}", f"[lablease] {fqdn}: your loan ends at {end}", text,
        {"loan": loan.id, "system": fqdn, "end": end}), now)


def loan_returned(uow, loan, fqdn: str, now: datetime, why: str) -> None:
    text = f"Your loan of {fqdn} was returned: {why}."
    queue(uow, Notice(
        loan.recipient, "loan.returned", str(loan.id), f"[lablease] {fqdn}: your loan was returned", text,
        {"loan": loan.id, "system": fqdn, "reason": why}), now)


def job_finished(uow, job, now: datetime) -> None:
    """Beaker's job completion mail: to the owner's destinations and the job's <notify><cc> addresses."""
    cc = ((job.document or {}).get("notify") or {}).get("cc", [])
    systems = sorted({r.system.fqdn for rs in job.recipe_sets for r in rs.recipes if r.system is not None})
    text = (f"Job {job.id} ({job.whiteboard or 'no whiteboard'}) finished: {job.status}, result {job.result}. "
            f"Systems: {', '.join(systems) or 'none'}. See it with: lablease job show {job.id}")
    queue(uow, Notice(
        job.owner, "job.finished", str(job.id), f"[lablease] job {job.id} {job.status}: {job.result}", text,
        {"job": job.id, "status": job.status, "result": job.result, "cc": list(cc)}, extra_mail=tuple(cc)), now)


def recipe_reserved(uow, recipe, reservation, fqdn: str, now: datetime) -> None:
    """reservesys: a finished recipe's system is kept for the job's owner (Beaker's "reserved" mail)."""
    end, job_id = format_time(reservation.end_at), recipe.recipe_set.job_id
    text = (f"Recipe {recipe.id} of job {job_id} finished {recipe.status} ({recipe.result}); {fqdn} is kept for you "
            f"until {end} as reservation {reservation.id}. Return it with: lablease return {reservation.id}")
    queue(uow, Notice(
        reservation.user, "recipe.reserved", str(recipe.id),
        f"[lablease] {fqdn}: reserved for you after recipe {recipe.id}", text,
        {"recipe": recipe.id, "job": job_id, "reservation": reservation.id, "system": fqdn, "end": end,
         "status": recipe.status, "result": recipe.result}), now)


def installation_failed(uow, user, fqdn: str, installation_id: int, why: str, now: datetime) -> None:
    text = f"Installation {installation_id} on {fqdn} failed: {why}."
    queue(uow, Notice(
        user, "installation.failed", str(installation_id), f"[lablease] {fqdn}: installation {installation_id} failed",
        text, {"installation": installation_id, "system": fqdn, "reason": why}), now)


def command_failed(uow, user, fqdn: str, command_id: int, why: str, now: datetime) -> None:
    text = f"A command on {fqdn}, which you hold, failed for good: {why}."
    queue(uow, Notice(
        user, "command.failed", str(command_id), f"[lablease] {fqdn}: {why.split(':')[0]}", text,
        {"command": command_id, "system": fqdn, "reason": why}), now)
