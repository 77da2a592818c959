"""Rules that keep people's holds in bounds: a pool's floor of idle Automated systems kept for the
scheduler, a purpose a site may require, a maximum total hold per user, and giving back part of an
advance reservation.

Pure functions of plain values (no clock, no I/O): the use cases read the counts and call these.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from .errors import Invalid
from .times import format_human

PURPOSE_MAX = 2000


# --- a floor for automation -------------------------------------------------------------------------

def idle_for_automation(condition: str, guest: bool, lent: bool, booked: bool) -> bool:
    """Does this system count toward its pools' floors: Automated, not a guest, not lent to anybody,
    and nothing booked on it during the window asked for (so the scheduler could give it out)."""
    return condition == "automated" and not guest and not lent and not booked


def floor_refusal(pool: str, pool_floor: int, idle_automated: int, system_is_automated_idle_member: bool) -> str | None:
    """Why a manual reservation or loan of one system must be refused to keep the pool's floor, or None.

    `idle_automated` counts the pool's systems idle for automation now, the one asked for included;
    taking it leaves one fewer. A system that is not one of them (Manual, lent, already booked)
    takes nothing from the scheduler, so it is never refused, even in a pool already below its floor.
    """
    if pool_floor <= 0 or not system_is_automated_idle_member:
        return None
    left = idle_automated - 1
    if left >= pool_floor:
        return None
    return (f"pool {pool} keeps a floor of {pool_floor} idle Automated system(s) for the scheduler: "
            f"{idle_automated} idle now, this would leave {left} (an admin may force it)")


def check_floor(value) -> int:
    """A pool's automation_floor: a whole number, 0 (no floor) or more."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise Invalid("automation_floor", "must be a whole number, 0 (no floor) or more")
    return value


@dataclass(frozen=True)
class FloorState:
    """One pool the system is in, as the floor rule needs it."""

    pool: str
    floor: int
    idle_automated: int


def waits_for_floor(states: list[FloorState], system_is_automated_idle_member: bool) -> bool:
    """The rule a waiting reservation calls (the waiting line): may it be granted now, or must it
    keep waiting until the pool has more idle Automated systems than its floor?"""
    return any(floor_refusal(s.pool, s.floor, s.idle_automated, system_is_automated_idle_member)
               for s in states)


# --- purpose ----------------------------------------------------------------------------------------

def check_purpose(purpose: str | None, required: bool) -> str | None:
    """The purpose a manual reservation or loan gives (stripped), required where the site says so."""
    text = (purpose or "").strip()
    if len(text) > PURPOSE_MAX:
        raise Invalid("purpose", f"must be at most {PURPOSE_MAX} characters")
    if required and not text:
        raise Invalid("purpose", "is required on this site: say what the system is for (require_purpose)")
    return text or None


# --- a maximum total hold per user ------------------------------------------------------------------

def remaining(start: datetime, end: datetime | None, now: datetime) -> timedelta | None:
    """What is left of a hold [start, end) from now on (all of it if it starts later); None: no end."""
    if end is None:
        return None
    return max(timedelta(0), end - max(start, now))


def total_hold(remainders: list[timedelta | None]) -> timedelta | None:
    """The sum of a user's open holds' remaining time; None when one of them has no end."""
    if any(r is None for r in remainders):
        return None
    return sum(remainders, timedelta(0))


def hold_refusal(max_hold: timedelta | None, current_total: timedelta | None, asked: timedelta | None) -> str | None:
    """Why a new hold (or the added part of an extension) of length `asked` must be refused, or None.

    current_total is the user's open manual reservations' remaining time (None: one has no end);
    asked None is an unlimited reservation. Both count toward the site's max_hold_per_user.
    """
    if max_hold is None:
        return None
    now_text = "unlimited" if current_total is None else format_human(current_total) or "0s"
    limit = format_human(max_hold)
    if asked is None or current_total is None:
        return (f"this site limits a user's open manual reservations to {limit} in total "
                f"(max_hold_per_user); yours now total {now_text}, and an unlimited one cannot fit")
    if current_total + asked <= max_hold:
        return None
    return (f"this site limits a user's open manual reservations to {limit} in total (max_hold_per_user); "
            f"yours now total {now_text}, and {format_human(asked)} more would pass it")


# --- giving back part of an advance reservation -----------------------------------------------------

def release_refusal(fqdn: str, held: set[str], in_use: set[str], ar_state: str) -> str | None:
    """Why the owner may not give back this system of the AR now, or None.

    Only a system the AR still holds, while the AR is granted (waiting, running or in error), and not
    while its own work (a recipe or a reservation inside it) uses it: that work would lose its system.
    """
    if ar_state not in ("w", "r", "E"):
        return f"the advance reservation is {ar_state}: nothing to give back"
    if fqdn not in held:
        return f"{fqdn} is not held by this advance reservation"
    if fqdn in in_use:
        return f"{fqdn} is in use inside the advance reservation (end that work first)"
    return None


def check_release(fqdns, held: list[str]) -> list[str]:
    """The systems a release names: at least one, each once, and never every one the AR holds
    (deleting the AR gives back all of them)."""
    names = [str(f).lower() for f in fqdns or []]
    if not names:
        raise Invalid("release", "name at least one system to give back")
    if len(set(names)) != len(names):
        raise Invalid("release", "names a system twice")
    if set(held) and set(names) >= set(held):
        raise Invalid("release", "would give back every system: delete the advance reservation instead")
    return names
