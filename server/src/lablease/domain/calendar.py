"""Calendar rules: when a new booking fits beside the existing ones.

An exclusive resource (capacity 1) never has two overlapping bookings, so the
only booking that can conflict with [s, e) is the latest one starting before
e: the store asks for that one booking and `exclusive_conflict` judges it.
Shared resources (capacity > 1) add up the quantities of overlapping bookings.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Iterable, Sequence

from .windows import Window, overlaps


@dataclass(frozen=True)
class Booking:
    id: int | None
    window: Window
    quantity: int = 1


def exclusive_conflict(latest_before_end: Booking | None, window: Window) -> Booking | None:
    """The conflicting booking, given the latest booking that starts before window.end."""
    if latest_before_end is None:
        return None
    return latest_before_end if overlaps(latest_before_end.window, window) else None


def peak_use(bookings: Iterable[Booking], window: Window) -> tuple[int, Booking | None]:
    """Highest total quantity booked at any moment inside window, and a booking at that peak.

    A sweep over start (+q) and end (-q) events; ends sort before starts at
    the same instant because windows are half-open.
    """
    events: list[tuple[datetime, int, int, Booking]] = []
    for booking in bookings:
        if not overlaps(booking.window, window):
            continue
        start = max(booking.window.start, window.start)
        events.append((start, 1, booking.quantity, booking))
        end = booking.window.end
        if end is not None and (window.end is None or end < window.end):
            events.append((end, 0, -booking.quantity, booking))
    events.sort(key=lambda event: (event[0], event[1]))
    current = peak = 0
    at_peak = None
    for _, _, delta, booking in events:
        current += delta
        if current > peak:
            peak, at_peak = current, booking
    return peak, at_peak


def fits_capacity(bookings: Sequence[Booking], window: Window, quantity: int, capacity: int) -> Booking | None:
    """None when quantity more fits in window; otherwise a booking at the full peak."""
    peak, at_peak = peak_use(bookings, window)
    if peak + quantity <= capacity:
        return None
    return at_peak or Booking(None, window, quantity)
