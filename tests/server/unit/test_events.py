"""Events reach the one handler table: consequences at once, the rest before the commit, none dropped."""
import dataclasses
import inspect
from datetime import datetime, timezone

import pytest

from lablease.domain import events as ev
from lablease.services.handlers import HANDLERS
from lablease.store.db import Database
from lablease.store.uow import UnitOfWork

NOW = datetime(2026, 11, 24, 12, 0, tzinfo=timezone.utc)


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    database = Database(f"sqlite:///{tmp_path_factory.mktemp('events')}/lablease.db")  # never written to
    yield database
    database.dispose()


def test_every_event_has_a_handler_in_the_table():
    kinds = [c for _, c in inspect.getmembers(ev, inspect.isclass) if issubclass(c, ev.Event) and c is not ev.Event]
    assert len(kinds) >= 8
    assert [k.__name__ for k in kinds if not HANDLERS.get(k)] == []
    assert all(dataclasses.is_dataclass(k) and k.__dataclass_params__.frozen for k in kinds)


def test_a_unit_of_work_without_the_table_refuses_an_event_rather_than_dropping_it(db):
    with UnitOfWork(db) as uow, pytest.raises(RuntimeError, match="SystemFreed emitted in a unit of work without"):
        uow.emit(ev.SystemFreed(1, NOW))


def test_an_event_nobody_handles_is_an_error(db):
    with UnitOfWork(db, handlers={ev.SystemFreed: (lambda uow, event: None,)}) as uow, \
            pytest.raises(RuntimeError, match="no handler takes DistroTreeRemoved"):
        uow.emit(ev.DistroTreeRemoved(3, NOW))
        uow.dispatch()


def test_consequences_at_once_notices_in_order_at_dispatch(db):
    seen = []

    def freed(uow, event):
        seen.append(("freed", event.system_id))
        if event.system_id == 1:
            uow.emit(ev.SystemChanged(9, NOW))  # emitted while handling: handled too, after the queue

    table = {ev.SystemFreed: (freed,), ev.SystemChanged: (lambda uow, event: seen.append(("changed", event.system_id)),),
             ev.ReservationClosed: (lambda uow, event: seen.append(("closed", event.reservation_id)),)}
    with UnitOfWork(db, handlers=table) as uow:
        uow.emit(ev.SystemFreed(1, NOW))
        uow.emit(ev.SystemFreed(2, NOW))
        uow.emit(ev.ReservationClosed(5, NOW, "returned"))
        assert seen == [("closed", 5)]  # the consequence at once, the others wait
        uow.dispatch()
    assert seen == [("closed", 5), ("freed", 1), ("freed", 2), ("changed", 9)]
