"""Random sequences of what people and the worker do, through the real API on SQLite and PostgreSQL: after
every step no system has two holders — of any kind: a reservation (by hand, loan-held), a recipe run, an
advance reservation's slot — read from the database itself.

A few short sequences per database (each example builds a fresh database): the planner's own properties
run thousands of cases in tests/server/unit/test_planner_properties.py.
"""
import itertools
import shutil
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from sqlalchemy import select

from lablease.store.db import Database
from lablease.store.tables import Booking, Recipe, Reservation
from lablease.store.advance_tables import AdvanceReservation, ArSystem
from lablease.store.uow import UnitOfWork
from lablease.worker.loop import run_due

from .conftest import Lab, at

HOLDING = ("assigned", "scheduled", "waiting", "installing", "running")
SYSTEMS = ("m1.lab.test", "a1.lab.test", "a2.lab.test")  # m1 Manual; a1, a2 Automated, a1 lent to alice
USERS = ("alice", "bob")
_ids = itertools.count()

pick = st.integers(min_value=0, max_value=50)  # which of the existing ones (modulo how many there are)
step = st.one_of(
    st.tuples(st.just("reserve"), st.sampled_from(USERS), st.sampled_from(SYSTEMS),
              st.sampled_from([0, 20, 90]), st.sampled_from(["30m", "1h", "3h"])),
    st.tuples(st.just("return"), pick),
    st.tuples(st.just("submit"), st.sampled_from(USERS), st.integers(1, 2), st.sampled_from([None, 1800, 7200])),
    st.tuples(st.just("finish"), pick),
    st.tuples(st.just("cancel"), pick),
    st.tuples(st.just("expire"), st.sampled_from([5, 31, 61, 130])),
    st.tuples(st.just("advance"), st.sampled_from(SYSTEMS), st.sampled_from([0, 45, 120])),
)


@pytest.fixture(params=["sqlite", "postgresql"])
def fresh_database(request, tmp_path):
    """A new migrated database per call (each hypothesis example starts from nothing)."""
    if request.param == "sqlite":
        template = request.getfixturevalue("sqlite_template")

        def make():
            path = tmp_path / f"h{next(_ids)}.db"
            shutil.copy(template, path)
            return Database(f"sqlite:///{path}")
        return make
    postgres, template = request.getfixturevalue("postgres"), request.getfixturevalue("pg_template")
    return lambda: Database(postgres.create_database(f"holders{next(_ids)}", template))


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(steps=st.lists(step, min_size=6, max_size=24))
def test_no_system_ever_has_two_holders(fresh_database, steps):
    db = fresh_database()
    try:
        lab = Lab(db)
        lab.system(SYSTEMS[0])
        for fqdn in SYSTEMS[1:]:
            lab.system(fqdn, condition="automated")
        assert lab.admin.post(f"/systems/{SYSTEMS[1]}/loan", {"recipient": "alice"})[0] == 201
        for n, action in enumerate(steps):
            status = _do(lab, action)
            assert status < 500, (n, action, status)
            _one_holder_each(db, lab.clock())
    finally:
        db.dispose()


def _do(lab, action) -> int:
    kind, *args = action
    now = lab.clock()
    if kind == "reserve":
        user, fqdn, later, duration = args
        status, body = getattr(lab, user).post("/reservations", {"system": fqdn, "duration": duration,
                                                                  "start": at(now + timedelta(minutes=later))})
        assert status in (201, 403, 409), body
        return status
    if kind == "return":
        ids = _ids_of(lab.db, select(Reservation.id).where(Reservation.returned_at.is_(None)))
        if not ids:
            return 0
        status, body = lab.admin.delete(f"/reservations/{ids[args[0] % len(ids)]}")
        assert status in (204, 409), body  # 409: a recipe's reservation ends with its recipe
        return status
    if kind == "submit":
        user, count, runtime = args
        recipe = {"runtime_limit": runtime} if runtime else {}
        status, body = getattr(lab, user).post("/jobs", {"recipe_sets": [{"recipes": [recipe] * count}]})
        assert status == 201, body
        return status
    if kind == "finish":
        ids = _ids_of(lab.db, select(Recipe.id).where(Recipe.status == "running"))
        if not ids:
            return 0
        status, body = lab.admin.patch(f"/recipes/{ids[args[0] % len(ids)]}", {"status": "completed", "result": "pass"})
        assert status == 200, body
        return status
    if kind == "cancel":
        ids = _ids_of(lab.db, select(Recipe.job_id).where(Recipe.status.in_(("queued",) + HOLDING)))
        if not ids:
            return 0
        status, body = lab.admin.post(f"/jobs/{ids[args[0] % len(ids)]}/cancel")
        assert status == 200, body
        return status
    if kind == "expire":
        lab.clock.advance(minutes=args[0])
        run_due(lab.db, lab.clock(), lab.settings)
        return 0
    fqdn, later = args  # an advance reservation of one named system, an hour long
    status, body = lab.admin.post("/advance-reservations", {
        "hosts": [fqdn], "start": at(now + timedelta(minutes=later)), "duration": "1h"})
    assert status in (201, 409), body
    return status


def _ids_of(db, query) -> list[int]:
    with UnitOfWork(db, write=False) as uow:
        return sorted(set(uow.session.execute(query).scalars()))


def _covers(start, end, now) -> bool:
    return start <= now and (end is None or end > now)


def _one_holder_each(db, now) -> None:
    with UnitOfWork(db, write=False) as uow:
        session = uow.session
        bookings = session.execute(select(Booking).where(Booking.exclusive)).scalars().all()
        reservations = session.execute(select(Reservation).where(
            Reservation.returned_at.is_(None), Reservation.system_id.is_not(None))).unique().scalars().all()
        recipes = session.execute(select(Recipe).where(Recipe.status.in_(HOLDING))).unique().scalars().all()
        slots = session.execute(select(ArSystem, AdvanceReservation).join(
            AdvanceReservation, AdvanceReservation.id == ArSystem.ar_id).where(
            AdvanceReservation.state.in_(("w", "r", "E")))).unique().all()
        booking = {b.id: b for b in bookings}

        # no two bookings of one calendar (a system's, or an advance reservation's slot) overlap, ever
        by_resource: dict[int, list] = {}
        for b in bookings:
            by_resource.setdefault(b.resource_id, []).append(b)
        for rows in by_resource.values():
            rows.sort(key=lambda b: b.start_at)
            for first, second in zip(rows, rows[1:]):
                assert first.end_at is not None and first.end_at <= second.start_at, (first.id, second.id)

        holders: dict[int, list] = {}  # system -> who holds it now
        for r in reservations:
            assert r.booking_id in booking, f"open reservation {r.id} without its booking"
            b = booking[r.booking_id]
            assert b.start_at <= r.start_at and (b.end_at is None or (r.end_at is not None and b.end_at >= r.end_at)), \
                f"reservation {r.id} holds longer than its booking"
            if r.ar_id is None and _covers(r.start_at, r.end_at, now):
                holders.setdefault(r.system_id, []).append(("reservation", r.id))
        open_on = {r.id: r.system_id for r in reservations}
        for recipe in recipes:
            assert open_on.get(recipe.reservation_id) == recipe.system_id, \
                f"recipe {recipe.id} ({recipe.status}) holds {recipe.system_id} without its open reservation"
        assert len({r.system_id for r in recipes}) == len(recipes), "two recipes on one system"
        for held, ar in slots:
            b = booking.get(held.booking_id)
            if b is not None and _covers(b.start_at, b.end_at, now):
                holders.setdefault(held.system_id, []).append(("advance reservation", ar.id))
        for system_id, who in holders.items():
            assert len(who) <= 1, f"system {system_id} has {len(who)} holders: {who}"
