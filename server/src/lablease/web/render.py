"""The jinja2 environment of the pages: templates in web/templates/, autoescaped, and the few filters they use."""
from __future__ import annotations

from datetime import datetime, timezone
from functools import cache
from pathlib import Path

from jinja2 import Environment, FileSystemLoader, StrictUndefined, select_autoescape

from ..domain.times import for_people, format_human, format_time, format_when

TEMPLATES = Path(__file__).parent / "templates"


def moment(value) -> datetime | None:
    """A time from a service's answer (RFC 3339 text) or a datetime; None stays None."""
    if value is None or isinstance(value, datetime):
        return value.replace(tzinfo=value.tzinfo or timezone.utc) if value else None
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def when(value) -> str:
    """`2026-11-24 14:00 UTC`: a time a person reads (the exact RFC 3339 time goes in a <time> element)."""
    return format_when(moment(value)) or "—"


def relative(value, now: datetime) -> str:
    """`3h ago` / `in 2h` / `no end` — durations in the units every form reads back."""
    at = moment(value)
    if at is None:
        return "no end"
    delta = (at - now).total_seconds()
    if abs(delta) < 60:
        return "just now" if delta <= 0 else "in under a minute"
    text = format_human(round(abs(delta) / 60) * 60)
    return f"in {text}" if delta > 0 else f"{text} ago"


def left(seconds: int | None) -> str:
    """Time left, to the minute (`4h59m59s` reads as `5h`)."""
    return format_human(round(seconds / 60) * 60) if seconds is not None else "no limit"


# A history entry (services/records/activity.py: action, field, old, new) in words, where the plain reading of its
# identifiers would not do ("health health: ...", "created condition: automated", "changed pools: None -> p1").
# Each takes (old, new); any other entry reads "<action> <field>: <old> → <new>" with what it has.
HAPPENED = {
    ("health", "health"): lambda old, new: new,  # "health check smoke passed"
    ("health_check", "health"): lambda old, new: f"started health check {new}",
    ("created", "condition"): lambda old, new: f"added as {new}",
    ("broken", "condition"): lambda old, new: f"became {new} (was {old})",
    ("changed", "pools"): lambda old, new: f"added to pool {new}" if new is not None else f"removed from pool {old}",
    ("policy_changed", "rule"): lambda old, new: (f"access rule added: {new}" if new is not None
                                                  else f"access rule removed: {old}"),
    ("lent", "loan"): lambda old, new: f"lent to {new}",
    ("loan_returned", "loan"): lambda old, new: f"loan to {old} ended: {new}",
    ("loan_extended", "loan end"): lambda old, new: f"loan extended: {old} → {new}",
    ("reserved", "reservation"): lambda old, new: f"reserved: reservation {new}",
    ("provision", "installation"): lambda old, new: f"provisioning: installation {new}",
    ("power", "action"): lambda old, new: f"power {new}",
}


def happened(entry: dict) -> str:
    """What a history entry says happened, in words (its times as people read them)."""
    return for_people(_happened(entry))


def _happened(entry: dict) -> str:
    action, field, old, new = entry["action"], entry.get("field"), entry.get("old"), entry.get("new")
    if (action, field) in HAPPENED:
        return HAPPENED[action, field](old, new)
    if field == "reservation" and new is None and old is not None:  # the action is why it ended
        return f"reservation {old} ended: {action.replace('_', ' ')}"
    text = action.replace("_", " ")
    if field and field != "reason" and field.replace(" ", "_") not in action:  # not "health check health"
        text += " " + field.replace("_", " ")
    if old is not None and new is not None:
        return f"{text}: {old} → {new}"
    return f"{text}: {new}" if new is not None else (f"{text} {old}" if old is not None else text)


@cache
def environment() -> Environment:
    env = Environment(loader=FileSystemLoader(TEMPLATES), autoescape=select_autoescape(default=True),
                      undefined=StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters.update(left=left, when=when, iso=lambda v: format_time(moment(v)) or "", human=format_human,
                       happened=happened, people=for_people)
    env.globals.update(relative=relative)
    return env
