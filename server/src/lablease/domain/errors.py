"""Broken rules, as errors that carry their data.

The API maps each class to one HTTP status (api/errors.py); the CLI maps the
status to an exit code. Nothing here knows about HTTP.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from .times import format_time


def format_path(path: tuple) -> str:
    """A place in a JSON document: ("recipe_sets", 0, "recipes", 1, "force") -> "recipe_sets[0].recipes[1].force"."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text or "job"


class DomainError(Exception):
    """A request that a rule refuses. `detail` is a sentence for a person."""

    title = "Request refused"

    def __init__(self, detail: str, **extra):
        super().__init__(detail)
        self.detail = detail
        self.extra = extra


# A reason that begins with one of these words says something of its field, which is its subject ("duration:
# must be positive"); any other is a sentence of its own ("the reservation has no end to extend", "no pool
# named p3"), which needs no field name before it.
PREDICATES = ("must ", "is ", "cannot ", "was ", "names ", "would ", "contains ")


def for_people(field_name: str | None, reason: str, subject: str | None = None) -> str:
    """An invalid field's reason in words for a person who did not write the request's fields (a page's form, a
    command's options): a sentence of its own stands alone, without the API's field name; a reason that speaks
    of its field gets `subject` (the words a form uses for it), or else the field's name, before it."""
    if not field_name:
        return reason
    if reason.startswith("'"):  # the value it refuses, quoted ("'soon' is not a duration"): say where it was
        return f"{subject or field_name}: {reason}"
    if not reason.startswith(PREDICATES):
        return reason
    return f"{subject} {reason}" if subject else f"{field_name}: {reason}"


class Invalid(DomainError):
    """Input that cannot be used: names the field and why."""

    title = "Invalid input"

    def __init__(self, field_name: str, reason: str):
        super().__init__(f"{field_name}: {reason}", field=field_name, reason=reason)
        self.field = field_name

    def for_people(self, subject: str | None = None) -> str:
        return for_people(self.field, self.extra["reason"], subject)


class UnknownField(Invalid):
    """A field the input does not take; `close` is a known name it was probably meant to be."""

    def __init__(self, field_name: str, close: str | None = None):
        super().__init__(field_name, "is not a known field")
        self.detail = f"unknown field {field_name!r}" + (f"; did you mean {close!r}?" if close else "")
        self.args = (self.detail,)

    def for_people(self, subject: str | None = None) -> str:
        return self.detail


class OutOfRange(Invalid):
    """A duration or time beyond the calendar's range (domain/windows.py)."""


class NotFound(DomainError):
    title = "Not found"


class Unauthenticated(DomainError):
    title = "Authentication required"


class Forbidden(DomainError):
    title = "Forbidden"


class NotReady(DomainError):
    """The server cannot do its work yet (readiness): the database, its schema or the worker; `checks` say."""

    title = "Not ready"


class DirectoryUnavailable(NotReady):
    """503: the site's directory (LDAP) did not answer in time; its URL is named, a local user still signs in."""

    title = "Directory unavailable"


class Conflict(DomainError):
    title = "Conflict"


class Gone(DomainError):
    """410: what was asked for was kept once and is no more (an event feed cursor older than its history)."""

    title = "Gone"


class ReservationEnded(Conflict):
    """409 `urn:lablease:problem:reservation-ended`: the reservation acted on was already returned. Its
    own type, so a client tells "you lost your system" from "the system is taken" (both 409)."""


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
        since, until = format_time(holder.start), format_time(holder.end)
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
