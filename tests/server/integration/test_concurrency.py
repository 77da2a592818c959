"""A double-booking storm through the reserve use case on real connections (SQLite and PostgreSQL).

Many threads, each with its own connection, try overlapping windows on one
system at the same instant; the calendar must accept a set that never
overlaps, and refuse every other attempt with a BookingConflict.
"""
import random
import threading
from datetime import datetime, timedelta, timezone

from sqlalchemy import select

from lablease.domain.reserve import ReserveRequest
from lablease.domain.errors import BookingConflict
from lablease.domain.permissions import Actor
from lablease.domain.reservations import ReservationPolicy
from lablease.domain.windows import Window, overlaps
from lablease.services.booking import reserve
from lablease.store.tables import Booking
from lablease.store.uow import UnitOfWork

ROUNDS, THREADS = 12, 8


def test_storm_never_double_books(lab):
    lab.system()
    now = datetime.now(timezone.utc)
    alice = Actor(2, "alice")
    policy = ReservationPolicy()
    outcomes = []
    rng = random.Random(7)

    def attempt(barrier, window):
        barrier.wait()
        try:
            with UnitOfWork(lab.db) as uow:
                asked = ReserveRequest("s1.lab.test", start=window.start, end=window.end)
                reserve.reserve(uow, alice, now, policy, asked)
                uow.commit()
            outcomes.append(("ok", window))
        except BookingConflict as conflict:
            outcomes.append(("conflict", window, conflict.holder))

    for _ in range(ROUNDS):
        barrier = threading.Barrier(THREADS)
        windows = []
        for _ in range(THREADS):
            start = now + timedelta(minutes=rng.randrange(0, 600))
            windows.append(Window(start, start + timedelta(minutes=rng.randrange(5, 120))))
        threads = [threading.Thread(target=attempt, args=(barrier, w)) for w in windows]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

    accepted = [o[1] for o in outcomes if o[0] == "ok"]
    assert len(outcomes) == ROUNDS * THREADS and accepted
    with UnitOfWork(lab.db, write=False) as uow:
        booked = [Window(b.start_at, b.end_at) for b in uow.session.execute(select(Booking)).scalars()]
    assert sorted(booked, key=lambda w: w.start) == sorted(accepted, key=lambda w: w.start)
    for i, a in enumerate(booked):
        for b in booked[i + 1:]:
            assert not overlaps(a, b)
    for _, window, holder in (o for o in outcomes if o[0] == "conflict"):
        assert overlaps(window, Window(holder.start, holder.end))
