"""Broken rules, as errors that carry their data.

The API maps each class to one HTTP status (api/errors.py); the CLI maps the
status to an exit code. Nothing here knows about HTTP.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


def _iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    return moment.isoformat(timespec="seconds").replace("+00:00", "Z")


class DomainError(Exception):
    """A request that a rule refuses. `detail` is a sentence for a person."""

    title = "Request refused"

    def __init__(self, detail: str, **extra):
        super().__init__(detail)
        self.detail = detail
        self.extra = extra


class Invalid(DomainError):
    """Input that cannot be used: names the field and why."""

    title = "Invalid input"

    def __init__(self, field_name: str, reason: str):
        super().__init__(f"{field_name}: {reason}", field=field_name, reason=reason)
        self.field = field_name


class OutOfRange(Invalid):
    """A duration or time beyond the calendar's range (domain/windows.py)."""


class NotFound(DomainError):
    title = "Not found"


class Unauthenticated(DomainError):
    title = "Authentication required"


class Forbidden(DomainError):
    title = "Forbidden"


class Conflict(DomainError):
    title = "Conflict"


@dataclass
class Holder:
    """Who holds a conflicting booking; name is None when the caller may not see it."""

    start: datetime
    end: datetime | None
    user: str | None = None
    kind: str | None = None
    ref: int | None = None
    extra: dict = field(default_factory=dict)


class BookingConflict(Conflict):
    """The calendar refused a booking because another one overlaps it."""

    title = "Booking conflict"

    def __init__(self, resource: str, holder: Holder):
        since, until = _iso(holder.start), _iso(holder.end)
        who = f" by {holder.user}" if holder.user else ""
        super().__init__(
            f"{resource} is reserved{who} from {since} until {until or 'further notice'}",
            conflict={
                "resource": resource,
                "start": since,
                "end": until,
                "user": holder.user,
                "kind": holder.kind,
                "id": holder.ref,
            },
        )
        self.resource = resource
        self.holder = holder


class CapacityExceeded(Conflict):
    title = "Capacity exceeded"


class LimitReached(DomainError):
    title = "Limit reached"
