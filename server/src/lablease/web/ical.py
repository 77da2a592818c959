"""A person's reservations and loans as an iCalendar feed (RFC 5545), written with the icalendar library."""
from __future__ import annotations

from datetime import datetime, timedelta

from icalendar import Calendar, Event

from .render import moment

OPEN_ENDED = timedelta(days=1)  # an event needs an end: an open-ended booking shows as a day, said in its title


def _event(uid: str, summary: str, start, end, now: datetime, description: str) -> Event:
    event = Event()
    event.add("uid", uid)
    event.add("dtstamp", now)
    event.add("dtstart", moment(start))
    event.add("dtend", moment(end) or moment(start) + OPEN_ENDED)
    event.add("summary", summary + ("" if end else " (no end)"))
    event.add("description", description)
    return event


def feed(user: str, reservations: list[dict], loans: list[dict], now: datetime) -> bytes:
    calendar = Calendar()
    calendar.add("prodid", "-//lablease//reservations//EN")
    calendar.add("version", "2.0")
    calendar.add("x-wr-calname", f"lablease: {user}")
    for r in reservations:
        calendar.add_component(_event(f"reservation-{r['id']}@lablease", f"Reserved {r['system']}", r["start"],
                                      r["end"], now, f"Reservation {r['id']} ({r['kind']}) of {r['system']}"))
    for loan in loans:
        calendar.add_component(_event(f"loan-{loan['id']}@lablease", f"Loan of {loan['system']}", loan["start"],
                                      loan["end"], now, f"{loan['system']} lent to {user}"))
    return calendar.to_ical()
