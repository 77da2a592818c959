"""Loan rules: who may lend, extend and return, and a loan's window."""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from .errors import Conflict, Invalid
from .permissions import ALLOW, Actor, Decision, Permission, SystemAccess, decide
from .times import format_time
from .windows import bounded_instant


@dataclass(frozen=True)
class LoanRequest:
    """A loan as asked for (POST /systems/{fqdn}/loan, a page's Borrow, Beaker's loan-grant), parsed."""

    fqdn: str
    recipient: str
    duration: timedelta | None = None
    limited: bool = False  # without a duration: the site's default loan length, not unlimited
    comment: str | None = None
    force: bool = False  # return the reservations in the way; take a pool below its floor (admins)
    purpose: str | None = None


def may_lend(actor: Actor, recipient_id: int, system: SystemAccess) -> Decision:
    """Owner, admins and loan_any lend to anyone; loan_self lends only to oneself."""
    if system.condition == "removed":
        return Decision(False, "the system is removed")
    if decide(actor, Permission.LOAN_ANY, system):
        return ALLOW
    if recipient_id == actor.id and decide(actor, Permission.LOAN_SELF, system):
        return ALLOW
    if recipient_id == actor.id:
        return Decision(False, "you need loan_self or loan_any on this system to borrow it")
    return Decision(False, "you need loan_any on this system to lend it to somebody else")


def may_extend_loan(actor: Actor, recipient_id: int, system: SystemAccess) -> Decision:
    """Extending needs loan_any, or loan_self for one's own loan: being the recipient is not enough."""
    if decide(actor, Permission.LOAN_ANY, system):
        return ALLOW
    if recipient_id == actor.id and decide(actor, Permission.LOAN_SELF, system):
        return ALLOW
    return Decision(False, "extending a loan needs loan_self (for your own loan) or loan_any on this system")


def may_return_loan(actor: Actor, recipient_id: int, system: SystemAccess) -> Decision:
    """The recipient, or anyone who may lend the system to others."""
    if recipient_id == actor.id or decide(actor, Permission.LOAN_ANY, system):
        return ALLOW
    return Decision(False, "only the recipient or someone with loan_any may return this loan")


def plan_loan_end(now: datetime, duration: timedelta | None, limited: bool, default: timedelta) -> datetime | None:
    """No limit unless asked: a duration, or `limited` for the site's default length."""
    if duration is not None:
        if duration <= timedelta(0):
            raise Invalid("duration", "must be positive")
        return now + duration
    return now + default if limited else None


def plan_loan_extension(now: datetime, current_end: datetime | None, end: datetime | None,
                        extend_by: timedelta | None) -> datetime:
    if (end is None) == (extend_by is None):
        raise Invalid("end", "give exactly one of end or extend_by")
    if extend_by is not None:
        if current_end is None:
            raise Invalid("extend_by", "the loan has no end to extend")
        end = current_end + extend_by
    end = bounded_instant(end, "end" if extend_by is None else "extend_by")
    if end <= now:
        raise Invalid("end", "must be in the future (return the loan to end it now)")
    return end


@dataclass(frozen=True)
class Held:
    """An open reservation of the system about to be lent."""

    reservation: int
    user_id: int
    user: str
    start: datetime
    end: datetime | None


def in_the_way(recipient_id: int, now: datetime, held: list[Held]) -> list[Held]:
    """The reservations that would keep the recipient from using the loan: other users' open ones,
    now or later (a reservation past its end is the worker's to return, and blocks nothing)."""
    return sorted((h for h in held if h.user_id != recipient_id and (h.end is None or h.end > now)),
                  key=lambda h: (h.start, h.reservation))


def _until(moment: datetime | None) -> str:
    return format_time(moment) or "further notice"


def refuse_lending_over(fqdn: str, recipient: str, blocking: list[Held]) -> None:
    """Lending a system another user holds a reservation on is refused (409) unless forced."""
    if not blocking:
        return
    first = blocking[0]
    more = f" (and {len(blocking) - 1} more reservation(s) of other users)" if len(blocking) > 1 else ""
    raise Conflict(
        f"{fqdn} is reserved by {first.user} until {_until(first.end)} (reservation {first.reservation}){more}, "
        f"so {recipient} could not use the loan; lend with force=true to return "
        f"{'them (their holders are told)' if more else 'it (its holder is told)'}",
        reservations=[{"id": h.reservation, "user": h.user, "start": format_time(h.start), "end": format_time(h.end)}
                      for h in blocking])
